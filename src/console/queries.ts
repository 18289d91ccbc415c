/**
 * The console's own reads, on top of the admin ones (src/admin/views.ts, metrics.ts): each is one
 * statement on an index, and each page sends them in a bounded number of D1 round trips.
 */

import { type AlertStateRow, listAlertStates } from "../db/alerts";
import { storedBody } from "../db/archive";
import {
	ackHistogramPerHour,
	type DeliveryDetail,
	type DeliveryListRow,
	deliveriesByMessageId,
	deliveriesOfResource,
	deliveriesPerMinute,
	deliveryDetail,
	lagHistogramPerHour,
	type ResourceDeliveryRow,
} from "../db/deliveries";
import { type WindowListRow, windowsOfRuns } from "../db/reconcile";
import { latestRejections, type RejectionRow, rejectionsPerHourSince } from "../db/rejections";
import { fanOut, newestInShards, type Shards, shardOfResource } from "../db/shards";
import { PROVIDER_NAMES } from "../providers";

export const DAY_MS = 24 * 60 * 60_000;

export interface MinuteCount {
	minute: number;
	status: string;
	n: number;
}
export interface HourPercentiles {
	hour: number;
	p50: number | null;
	p99: number | null;
	n: number;
}
export interface HourReason {
	hour: number;
	reason: string;
	n: number;
}
export type AlertRow = AlertStateRow;

/** Nearest-rank p50 and p99 per hour from histogram rows. */
export function percentilesFromHistogram(rows: Record<string, unknown>[]): HourPercentiles[] {
	const byHour = new Map<number, { value: number; n: number }[]>();
	for (const r of rows) {
		const len = Number(r.len);
		const value = len <= 2 ? Number(r.lead) : Number(r.lead) * 10 ** (len - 2);
		const list = byHour.get(Number(r.hour)) ?? [];
		list.push({ value, n: Number(r.n) });
		byHour.set(Number(r.hour), list);
	}
	return [...byHour.entries()]
		.sort((a, b) => a[0] - b[0])
		.map(([hour, buckets]) => {
			buckets.sort((a, b) => a.value - b.value);
			const n = buckets.reduce((a, b) => a + b.n, 0);
			const at = (p: number) => {
				let seen = 0;
				for (const b of buckets) {
					seen += b.n;
					if (seen >= p * n) return b.value;
				}
				return null;
			};
			return { hour, n, p50: at(0.5), p99: at(0.99) };
		});
}

export interface OverviewCharts {
	perMinute: MinuteCount[];
	ack: HourPercentiles[];
	lag: HourPercentiles[];
	rejectionsPerHour: HourReason[];
	alerts: AlertRow[];
}

type Row = Record<string, number | string | null>;

/**
 * One D1 batch per shard for the delivery charts, and one in the home shard for rejections and
 * alert states, over the last 24 h. Counts and histogram buckets from several shards add up, so
 * the merged percentiles are those of all deliveries (src/db/shards.ts).
 */
export async function readOverviewCharts(shards: Shards, nowMs: number): Promise<OverviewCharts> {
	const since = nowMs - DAY_MS;
	const home = shards.home.db;
	const [[rejections, alerts], perShard] = await Promise.all([
		home.batch<Row>([
			// Range on the primary key's leading column (minute).
			rejectionsPerHourSince(home, Math.floor(since / 60_000)),
			listAlertStates(home),
		]),
		fanOut(shards, ({ db }) =>
			db.batch<Row>([
				// Range on deliveries_received_at; one row per (minute, status).
				deliveriesPerMinute(db, since),
				ackHistogramPerHour(db, since),
				lagHistogramPerHour(db, since),
			]),
		),
	]);
	const perMinute = new Map<string, MinuteCount>();
	for (const [minutes] of perShard) {
		for (const r of minutes?.results ?? []) {
			const key = `${r.minute}:${r.status}`;
			const sum = perMinute.get(key) ?? { minute: Number(r.minute), status: String(r.status), n: 0 };
			sum.n += Number(r.n);
			perMinute.set(key, sum);
		}
	}
	return {
		perMinute: [...perMinute.values()],
		ack: percentilesFromHistogram(perShard.flatMap(([, ack]) => ack?.results ?? [])),
		lag: percentilesFromHistogram(perShard.flatMap(([, , lag]) => lag?.results ?? [])),
		rejectionsPerHour: (rejections?.results ?? []).map((r) => ({
			hour: Number(r.hour),
			reason: String(r.reason),
			n: Number(r.n),
		})),
		alerts: (alerts?.results ?? []) as unknown as AlertRow[],
	};
}

export type { DeliveryDetail, DeliveryListRow, ResourceDeliveryRow };

/**
 * Named columns only: never the stored headers nor the send token. Unique index (provider, message_id).
 * A body moved to the R2 archive is read back from it (src/db/archive.ts).
 */
export async function readDelivery(
	shards: Shards,
	provider: string,
	messageId: string,
	archive?: R2Bucket,
): Promise<(DeliveryDetail & { shard: number }) | null> {
	// Each shard answers on its unique index (src/db/shards.ts newestInShards).
	const d = await newestInShards(shards, (db) => deliveryDetail(db, provider, messageId));
	if (d !== null && d.raw_body === null) d.raw_body = await storedBody(archive, d);
	return d;
}

/** A message id across senders (or one): `provider IN (...)` lets the unique index serve it. */
export async function findByMessageId(
	shards: Shards,
	messageId: string,
	provider: string | undefined,
): Promise<DeliveryListRow[]> {
	const providers = JSON.stringify(provider ? [provider] : [...PROVIDER_NAMES]);
	return (await fanOut(shards, (s) => deliveriesByMessageId(s.db, providers, messageId))).flat();
}

/** How many deliveries of one resource the page lists. */
export const RESOURCE_DELIVERIES_LIMIT = 200;

/** On deliveries_resource: every delivery that carried this resource, in version order. */
export async function resourceDeliveries(
	shards: Shards,
	provider: string,
	type: string,
	wallet: string,
	id: string,
): Promise<ResourceDeliveryRow[]> {
	// A resource's deliveries live in its shard (src/db/shards.ts).
	const { db } = shardOfResource(shards, { provider, type, wallet, id });
	return deliveriesOfResource(db, provider, type, wallet, id, RESOURCE_DELIVERIES_LIMIT);
}

export type WindowRow = WindowListRow;

/** The windows of the listed runs, on the primary key (run_id leads); bounded. */
export async function runWindows(db: D1Database, runIds: string[]): Promise<WindowRow[]> {
	if (runIds.length === 0) return [];
	return windowsOfRuns(db, JSON.stringify(runIds));
}

export async function readAlerts(db: D1Database): Promise<AlertRow[]> {
	const { results } = await listAlertStates(db).all<AlertRow>();
	return results;
}

/** Rejections per hour and reason over 24 h (primary key range) with the latest samples, one batch. */
export async function readRejections(db: D1Database, nowMs: number) {
	const [perHour, latest] = await db.batch<Record<string, number | string | null>>([
		rejectionsPerHourSince(db, Math.floor((nowMs - DAY_MS) / 60_000)),
		latestRejections(db),
	]);
	return {
		perHour: (perHour?.results ?? []).map((r) => ({ hour: Number(r.hour), reason: String(r.reason), n: Number(r.n) })),
		latest: (latest?.results ?? []) as unknown as Omit<RejectionRow, "id" | "seq">[],
	};
}
