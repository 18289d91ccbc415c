/**
 * Moves the raw bodies of settled deliveries (processed, stale, ignored) from D1 to the R2 archive,
 * in bounded chunks per sweep tick (docs/design.md invariant 8), so D1 keeps only indexes, dedupe
 * keys and state (docs/design.md, storage at scale). Each body is written to R2 first and removed
 * from D1 only once the write succeeded, and only if the row has not changed since it was read
 * (same status_at): a row a sender re-opened or an operator replayed meanwhile keeps its body.
 * `failed` deliveries keep theirs in D1: they are the ones waiting for a fix and a replay.
 */
import { archiveKey } from "../db/archive";
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

// The partial index deliveries_to_archive holds exactly these rows; named, because the planner
// would otherwise pick the status index and read every archived row on each tick.
export const CANDIDATES = `
SELECT d.id, d.provider, d.message_id, d.raw_body, d.status_at
FROM deliveries AS d
JOIN (SELECT id, body_bytes, sum(body_bytes) OVER (ORDER BY status_at, id) AS upto
      FROM (SELECT id, body_bytes, status_at FROM deliveries INDEXED BY deliveries_to_archive
            WHERE raw_body IS NOT NULL AND status IN ('processed', 'stale', 'ignored') AND status_at <= ?1
            ORDER BY status_at, id LIMIT ?2)) AS w ON w.id = d.id
WHERE w.upto <= ?3 OR w.upto = w.body_bytes
ORDER BY d.status_at, d.id`;

const RELEASE = `
UPDATE deliveries SET raw_body = NULL, archived_at = ?1
FROM (SELECT value->>'id' AS id, value->>'at' AS at FROM json_each(?2)) AS j
WHERE deliveries.id = j.id AND deliveries.status_at = j.at AND deliveries.raw_body IS NOT NULL
  AND deliveries.status IN ('processed', 'stale', 'ignored')`;

interface Candidate {
	id: number;
	provider: string;
	message_id: string;
	raw_body: string;
	status_at: number;
}

export async function archiveSettledBodies(
	db: D1Database,
	archive: R2Bucket,
	nowMs: number,
	limit = ARCHIVE_CHUNK,
): Promise<ArchiveReport> {
	const { results } = await db
		.prepare(CANDIDATES)
		.bind(nowMs - ARCHIVE_GRACE_MS, limit, ARCHIVE_CHUNK_BYTES)
		.all<Candidate>();
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
	const released = await db
		.prepare(RELEASE)
		.bind(nowMs, JSON.stringify(stored.map((r) => ({ id: r.id, at: r.status_at }))))
		.run();
	return { archived: released.meta.changes ?? 0, failed };
}
