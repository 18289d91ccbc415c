/**
 * GET /admin/metrics: one D1 batch of aggregate reads per shard, summed (src/db/shards.ts); the
 * rejections are the home shard's.
 */
import { countDeliveriesByStatus, oldestUnprocessed } from "../db/deliveries";
import { countEffectsByStatus } from "../db/effects";
import { rejectionsByReasonSince } from "../db/rejections";
import { listSettledTotals } from "../db/settled-totals";
import { fanOut, type Shards } from "../db/shards";
import { D1_LIMIT_BYTES, sizeAfter } from "../db/size";

export const REJECTION_WINDOW_MS = 24 * 60 * 60_000;

type Row = Record<string, number | string | null>;

export async function readMetrics(shards: Shards, nowMs: number, lastReconcile: unknown) {
	const home = shards.home.db;
	const [rejections, perShard] = await Promise.all([
		rejectionsByReasonSince(home, Math.floor((nowMs - REJECTION_WINDOW_MS) / 60_000)).all<Row>(),
		fanOut(shards, ({ db }) =>
			db.batch<Row>([
				countDeliveriesByStatus(db),
				oldestUnprocessed(db),
				countEffectsByStatus(db),
				listSettledTotals(db),
			]),
		),
	]);

	const deliveries: Record<string, number> = {};
	let total = 0;
	let duplicates = 0;
	const effectCounts: Record<string, number> = { pending: 0, failed: 0, done: 0 };
	const settledTotals: Record<string, { count: number; amount: number }> = {};
	let oldestMs: number | null = null;
	let bytes: number | null = null;
	for (const [byStatus, oldest, effects, settled] of perShard) {
		for (const r of byStatus?.results ?? []) {
			const status = String(r.status);
			deliveries[status] = (deliveries[status] ?? 0) + Number(r.n);
			total += Number(r.n);
			duplicates += Number(r.d ?? 0);
		}
		for (const r of effects?.results ?? []) effectCounts[String(r.s)] = (effectCounts[String(r.s)] ?? 0) + Number(r.n);
		for (const r of settled?.results ?? []) {
			const sum = settledTotals[String(r.currency)] ?? { count: 0, amount: 0 };
			settledTotals[String(r.currency)] = { count: sum.count + Number(r.count), amount: sum.amount + Number(r.amount) };
		}
		const o = oldest?.results[0]?.oldest;
		if (typeof o === "number") oldestMs = oldestMs === null ? o : Math.min(oldestMs, o);
		const size = sizeAfter(byStatus);
		if (size !== null) bytes = (bytes ?? 0) + size;
	}
	const byReason: Record<string, number> = {};
	for (const r of rejections.results ?? []) byReason[String(r.reason)] = Number(r.n);

	return {
		deliveries: {
			byStatus: deliveries,
			total,
			duplicates,
			// Duplicate copies received per stored delivery.
			duplicateRate: total === 0 ? 0 : Number((duplicates / (total + duplicates)).toFixed(4)),
		},
		rejections: { windowHours: 24, byReason },
		oldestUnprocessedAgeSeconds:
			typeof oldestMs === "number" ? Math.max(0, Math.round((nowMs - oldestMs) / 1000)) : null,
		effects: effectCounts,
		settled: settledTotals,
		lastReconcile,
		// Summed over shards: each has D1's limit of its own (docs/design.md, storage at scale).
		database: { bytes, limitBytes: D1_LIMIT_BYTES * shards.all.length },
	};
}
