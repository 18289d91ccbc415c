/**
 * The console's own reads, on top of the admin ones (src/admin/views.ts, metrics.ts): each is one
 * statement on an index, and each page sends them in a bounded number of D1 round trips.
 */
import { type AlertStateRow, listAlertStates } from "../db/alerts";
import { storedBody } from "../db/archive";
import { type WindowListRow, windowsOfRuns } from "../db/reconcile";
import { latestRejections, type RejectionRow, rejectionsPerHourSince } from "../db/rejections";
import { PROVIDER_NAMES } from "../providers/model";

export const DAY_MS = 24 * 60 * 60_000;
const HOUR_MS = 60 * 60_000;

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

/**
 * A histogram of `value` per hour of received_at, to two significant digits (bucket = the first
 * two digits and the digit count): one index range scan and a GROUP BY, no sort of the rows, so
 * p50/p99 come out within 10% (the bucket's lower bound) at a fraction of a window function's cost.
 */
function histogramPerHour(value: string, where: string): string {
	const v = `max(${value}, 0)`;
	return `SELECT received_at / ${HOUR_MS} AS hour, length(${v}) AS len, CAST(substr(${v}, 1, 2) AS INTEGER) AS lead,
       count(*) AS n
     FROM deliveries WHERE received_at >= ?1 AND ${where} GROUP BY hour, len, lead`;
}

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

/** One D1 batch: the overview's charts and the alert states, over the last 24 h. */
export async function readOverviewCharts(db: D1Database, nowMs: number): Promise<OverviewCharts> {
	const since = nowMs - DAY_MS;
	const [perMinute, ack, lag, rejections, alerts] = await db.batch<Record<string, number | string | null>>([
		// Range on deliveries_received_at; one row per (minute, status).
		db
			.prepare(
				"SELECT received_at / 60000 AS minute, status, count(*) AS n FROM deliveries WHERE received_at >= ?1 GROUP BY minute, status",
			)
			.bind(since),
		db.prepare(histogramPerHour("ack_ms", "ack_ms IS NOT NULL")).bind(since),
		db
			.prepare(histogramPerHour("processed_at - event_at", "processed_at IS NOT NULL AND event_at IS NOT NULL"))
			.bind(since),
		// Range on the primary key's leading column (minute).
		rejectionsPerHourSince(db, Math.floor(since / 60_000)),
		listAlertStates(db),
	]);
	return {
		perMinute: (perMinute?.results ?? []).map((r) => ({
			minute: Number(r.minute),
			status: String(r.status),
			n: Number(r.n),
		})),
		ack: percentilesFromHistogram(ack?.results ?? []),
		lag: percentilesFromHistogram(lag?.results ?? []),
		rejectionsPerHour: (rejections?.results ?? []).map((r) => ({
			hour: Number(r.hour),
			reason: String(r.reason),
			n: Number(r.n),
		})),
		alerts: (alerts?.results ?? []) as unknown as AlertRow[],
	};
}

export interface DeliveryDetail {
	id: number;
	provider: string;
	message_id: string;
	event: string;
	status: string;
	raw_body: string | null;
	body_bytes: number;
	provider_attempt: number | null;
	attempt_ref: string | null;
	note: string | null;
	resource_type: string | null;
	resource_wallet: string | null;
	resource_id: string | null;
	resource_version: number | null;
	received_at: number;
	status_at: number;
	attempts: number;
	duplicates: number;
	last_duplicate_at: number | null;
	last_error: string | null;
	processed_at: number | null;
	ack_ms: number | null;
	event_at: number | null;
	archived_at: number | null;
}

/**
 * Named columns only: never the stored headers nor the send token. Unique index (provider, message_id).
 * A body moved to the R2 archive is read back from it (src/db/archive.ts).
 */
export async function readDelivery(
	db: D1Database,
	provider: string,
	messageId: string,
	archive?: R2Bucket,
): Promise<DeliveryDetail | null> {
	const d = await db
		.prepare(
			`SELECT id, provider, message_id, event, status, raw_body, body_bytes, provider_attempt, attempt_ref, note,
         resource_type, resource_wallet, resource_id, resource_version, received_at, status_at, attempts,
         duplicates, last_duplicate_at, last_error, processed_at, ack_ms, event_at, archived_at
       FROM deliveries WHERE provider = ?1 AND message_id = ?2`,
		)
		.bind(provider, messageId)
		.first<DeliveryDetail>();
	if (d !== null && d.raw_body === null) d.raw_body = await storedBody(archive, d);
	return d;
}

export interface DeliveryListRow {
	id: number;
	provider: string;
	message_id: string;
	event: string;
	status: string;
	received_at: number;
	attempts: number;
	duplicates: number;
	last_error: string | null;
}

/** A message id across senders (or one): `provider IN (...)` lets the unique index serve it. */
export async function findByMessageId(
	db: D1Database,
	messageId: string,
	provider: string | undefined,
): Promise<DeliveryListRow[]> {
	const providers = provider ? [provider] : [...PROVIDER_NAMES];
	const { results } = await db
		.prepare(
			`SELECT id, provider, message_id, event, status, received_at, attempts, duplicates, last_error FROM deliveries
       WHERE provider IN (SELECT value FROM json_each(?1)) AND message_id = ?2`,
		)
		.bind(JSON.stringify(providers), messageId)
		.all<DeliveryListRow>();
	return results;
}

/** How many deliveries of one resource the page lists. */
export const RESOURCE_DELIVERIES_LIMIT = 200;

export interface ResourceDeliveryRow {
	message_id: string;
	event: string;
	status: string;
	resource_version: number | null;
	received_at: number;
	processed_at: number | null;
	event_at: number | null;
}

/** On deliveries_resource: every delivery that carried this resource, in version order. */
export async function resourceDeliveries(
	db: D1Database,
	provider: string,
	type: string,
	wallet: string,
	id: string,
): Promise<ResourceDeliveryRow[]> {
	const { results } = await db
		.prepare(
			`SELECT message_id, event, status, resource_version, received_at, processed_at, event_at FROM deliveries
       WHERE provider = ?1 AND resource_type = ?2 AND resource_wallet = ?3 AND resource_id = ?4
       ORDER BY resource_version, id LIMIT ${RESOURCE_DELIVERIES_LIMIT}`,
		)
		.bind(provider, type, wallet, id)
		.all<ResourceDeliveryRow>();
	return results;
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
