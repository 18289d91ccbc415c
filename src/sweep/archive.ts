/**
 * Moves the raw bodies of settled deliveries (processed, stale, ignored) from D1 to the R2 archive,
 * in bounded chunks per sweep tick (docs/design.md invariant 8), so D1 keeps only indexes, dedupe
 * keys and state (docs/design.md, storage at scale). Each body is written to R2 first and removed
 * from D1 only once the write succeeded, and only if the row has not changed since it was read
 * (same status_at): a row a sender re-opened or an operator replayed meanwhile keeps its body.
 * Removing a body rewrites its row (releaseStatements), so the space is reclaimed, not just emptied.
 * `failed` deliveries keep theirs in D1: they are the ones waiting for a fix and a replay.
 */
import { archiveKey } from "../db/archive";
import { type ArchiveCandidate, archiveCandidates, deleteMoved, reinsertMovedWithoutBody } from "../db/deliveries";
import { clearMoves, copyToMoves } from "../db/delivery-moves";
import { errorMessage, log } from "../log";

/** Bodies moved per sweep tick, at most; the archive catches up over ticks. */
export const ARCHIVE_CHUNK = 50;
/** And at most this many body bytes per tick, so a chunk of large bodies stays within memory. */
export const ARCHIVE_CHUNK_BYTES = 8 * 1024 * 1024;
/**
 * A delivery is archived this long after it settled: the one just applied is the one an operator
 * is most likely to open or replay, and those reads stay in D1.
 */
export const ARCHIVE_GRACE_MS = 60_000;

export interface ArchiveReport {
	archived: number;
	/** R2 writes that failed this tick; those bodies stay in D1 for the next tick. */
	failed: number;
}

/**
 * Releases the bodies R2 now holds: one D1 batch (one transaction) that copies the rows aside,
 * deletes them and inserts them back, same id, without their body. SQLite reclaims a row's space
 * only on delete; an UPDATE to NULL would leave every page as large as before. Only rows unchanged
 * since they were read (same status_at, still settled, body still in D1) are moved.
 */
function releaseStatements(db: D1Database, rows: readonly ArchiveCandidate[], nowMs: number): D1PreparedStatement[] {
	const moved = JSON.stringify(rows.map((r) => ({ id: r.id, at: r.status_at })));
	return [copyToMoves(db, moved), deleteMoved(db), reinsertMovedWithoutBody(db, nowMs), clearMoves(db)];
}

export async function archiveSettledBodies(
	db: D1Database,
	archive: R2Bucket,
	nowMs: number,
	limit = ARCHIVE_CHUNK,
): Promise<ArchiveReport> {
	const results = await archiveCandidates(db, nowMs - ARCHIVE_GRACE_MS, limit, ARCHIVE_CHUNK_BYTES);
	if (results.length === 0) return { archived: 0, failed: 0 };
	const written = await Promise.allSettled(
		results.map((r) =>
			archive.put(archiveKey(r.provider, r.message_id), r.raw_body, {
				httpMetadata: { contentType: "application/json" },
			}),
		),
	);
	const stored = results.filter((_, i) => written[i]?.status === "fulfilled");
	const failed = results.length - stored.length;
	if (failed > 0) {
		const first = written.find((w): w is PromiseRejectedResult => w.status === "rejected");
		log("error", "archive_put_failed", { count: failed, error: errorMessage(first?.reason) });
	}
	if (stored.length === 0) return { archived: 0, failed };
	const released = await db.batch(releaseStatements(db, stored, nowMs));
	return { archived: released[2]?.meta.changes ?? 0, failed };
}
