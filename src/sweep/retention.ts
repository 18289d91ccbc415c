/**
 * Retention, in bounded chunks per sweep tick. Raw bodies go after RETENTION_DAYS (the primary
 * sender's replay window is 30 days, docs/providers.md 1.1); the rows themselves, which are the dedupe keys, stay until
 * DEDUPE_RETENTION_DAYS so a late replay of a pruned delivery is still recognised as a duplicate.
 * Only settled rows are pruned: a `received`/`enqueued` row keeps its body until it is applied.
 * With the R2 archive bound, processed/stale/ignored bodies are moved there instead (archive.ts),
 * never dropped here, so a backlog older than RETENTION_DAYS is archived rather than lost; only
 * `failed` bodies are pruned from D1 after RETENTION_DAYS.
 * Effects and resources are never pruned: the effect rows are what make effects fire once.
 */
import { pruneBodies, pruneDeliveries } from "../db/deliveries";
import { pruneRejectionCounts, pruneRejections } from "../db/rejections";
import { fanOut, type Shards } from "../db/shards";
import type { Config } from "../env";

export const RETENTION_CHUNK = 500;
const DAY_MS = 24 * 60 * 60_000;
/** Per-minute rejection counters feed 24 h metrics and 5 min alerts; two days is plenty. */
export const REJECTION_COUNT_RETENTION_MS = 2 * DAY_MS;

export interface RetentionReport {
	bodiesPruned: number;
	deliveriesDeleted: number;
	rejectionsDeleted: number;
	rejectionCountsDeleted: number;
}

/** One batch per shard; the rejection tables live in the home shard only (src/db/shards.ts). */
export async function pruneExpired(
	shards: Shards,
	config: Config,
	nowMs: number,
	archiving = false,
): Promise<RetentionReport> {
	const bodyCutoff = nowMs - config.retentionDays * DAY_MS;
	const keyCutoff = nowMs - Math.max(config.dedupeRetentionDays, config.retentionDays) * DAY_MS;
	const perShard = await fanOut(shards, async ({ db, index }) => {
		const [bodies, deliveries, rejections, counts] = await db.batch([
			pruneBodies(db, bodyCutoff, RETENTION_CHUNK, archiving),
			pruneDeliveries(db, keyCutoff, RETENTION_CHUNK),
			...(index === shards.home.index
				? [
						pruneRejections(db, bodyCutoff, RETENTION_CHUNK),
						// Counter rows could once be created per request (one per random provider name); a
						// backlog of them is worked off chunk by chunk (docs/design.md invariant 8).
						pruneRejectionCounts(db, Math.floor((nowMs - REJECTION_COUNT_RETENTION_MS) / 60_000), RETENTION_CHUNK),
					]
				: []),
		]);
		return {
			bodiesPruned: bodies?.meta.changes ?? 0,
			deliveriesDeleted: deliveries?.meta.changes ?? 0,
			rejectionsDeleted: rejections?.meta.changes ?? 0,
			rejectionCountsDeleted: counts?.meta.changes ?? 0,
		};
	});
	const sum = (key: keyof RetentionReport) => perShard.reduce((n, r) => n + r[key], 0);
	return {
		bodiesPruned: sum("bodiesPruned"),
		deliveriesDeleted: sum("deliveriesDeleted"),
		rejectionsDeleted: sum("rejectionsDeleted"),
		rejectionCountsDeleted: sum("rejectionCountsDeleted"),
	};
}
