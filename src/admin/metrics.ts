/** GET /admin/metrics: one D1 batch of aggregate reads. */
import { countDeliveriesByStatus, oldestUnprocessed } from "../db/deliveries";
import { countEffectsByStatus } from "../db/effects";
import { rejectionsByReasonSince } from "../db/rejections";
import { listSettledTotals } from "../db/settled-totals";
import { D1_LIMIT_BYTES, sizeAfter } from "../db/size";

export const REJECTION_WINDOW_MS = 24 * 60 * 60_000;

export async function readMetrics(db: D1Database, nowMs: number, lastReconcile: unknown) {
	const [byStatus, rejections, oldest, effects, settled] = await db.batch<Record<string, number | string | null>>([
		countDeliveriesByStatus(db),
		rejectionsByReasonSince(db, Math.floor((nowMs - REJECTION_WINDOW_MS) / 60_000)),
		oldestUnprocessed(db),
		countEffectsByStatus(db),
		listSettledTotals(db),
	]);

	const deliveries: Record<string, number> = {};
	let total = 0;
	let duplicates = 0;
	for (const r of byStatus?.results ?? []) {
		deliveries[String(r.status)] = Number(r.n);
		total += Number(r.n);
		duplicates += Number(r.d ?? 0);
	}
	const byReason: Record<string, number> = {};
	for (const r of rejections?.results ?? []) byReason[String(r.reason)] = Number(r.n);
	const effectCounts: Record<string, number> = { pending: 0, failed: 0, done: 0 };
	for (const r of effects?.results ?? []) effectCounts[String(r.s)] = Number(r.n);
	const settledTotals: Record<string, { count: number; amount: number }> = {};
	for (const r of settled?.results ?? [])
		settledTotals[String(r.currency)] = { count: Number(r.count), amount: Number(r.amount) };
	const oldestMs = oldest?.results[0]?.oldest;

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
		database: { bytes: sizeAfter(byStatus), limitBytes: D1_LIMIT_BYTES },
	};
}
