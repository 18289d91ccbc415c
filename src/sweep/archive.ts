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

/** Every column of `deliveries` (test/scale/archive.test.ts fails when the table has another). */
export const DELIVERY_COLUMNS = [
	"id",
	"provider",
	"message_id",
	"event",
	"status",
	"raw_body",
	"body_bytes",
	"provider_attempt",
	"attempt_ref",
	"headers",
	"note",
	"resource_type",
	"resource_wallet",
	"resource_id",
	"resource_version",
	"received_at",
	"status_at",
	"send_token",
	"send_token_at",
	"attempts",
	"duplicates",
	"last_duplicate_at",
	"last_error",
	"processed_at",
	"ack_ms",
	"event_at",
	"archived_at",
] as const;

const COLUMNS = DELIVERY_COLUMNS.join(", ");
const WITHOUT_BODY = DELIVERY_COLUMNS.map((c) => (c === "raw_body" ? "NULL" : c === "archived_at" ? "?1" : c)).join(
	", ",
);

/**
 * Releases the bodies R2 now holds: one D1 batch (one transaction) that copies the rows aside,
 * deletes them and inserts them back, same id, without their body. SQLite reclaims a row's space
 * only on delete; an UPDATE to NULL would leave every page as large as before. Only rows unchanged
 * since they were read (same status_at, still settled, body still in D1) are moved.
 */
function releaseStatements(db: D1Database, rows: readonly Candidate[], nowMs: number): D1PreparedStatement[] {
	const moved = JSON.stringify(rows.map((r) => ({ id: r.id, at: r.status_at })));
	return [
		db
			.prepare(
				`INSERT INTO delivery_moves (${COLUMNS})
         SELECT ${DELIVERY_COLUMNS.map((c) => `d.${c}`).join(", ")} FROM deliveries AS d
         JOIN (SELECT value->>'id' AS id, value->>'at' AS at FROM json_each(?1)) AS j ON d.id = j.id AND d.status_at = j.at
         WHERE d.raw_body IS NOT NULL AND d.status IN ('processed', 'stale', 'ignored')`,
			)
			.bind(moved),
		db.prepare("DELETE FROM deliveries WHERE id IN (SELECT id FROM delivery_moves)"),
		db.prepare(`INSERT INTO deliveries (${COLUMNS}) SELECT ${WITHOUT_BODY} FROM delivery_moves`).bind(nowMs),
		db.prepare("DELETE FROM delivery_moves"),
	];
}

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
	const released = await db.batch(releaseStatements(db, stored, nowMs));
	return { archived: released[2]?.meta.changes ?? 0, failed };
}
