/**
 * Every statement on `deliveries`, the inbox (docs/design.md invariants 2-4): the ingress upsert
 * and the "enqueued" marks, the consumer's outcomes, the sweep's re-sends, replay, retention, the
 * archive's rewrite, and the reads of the admin API, the console, metrics and alerts. Statements
 * that must share a D1 batch with others are returned unexecuted (D1PreparedStatement), so their
 * callers keep their round trips.
 */
import type { SqlRow, WithStatus } from "./rows";
import type { deliveries } from "./schema";

/** received -> enqueued -> processed | stale | ignored | failed (docs/design.md, delivery statuses). */
export const DELIVERY_STATUSES = ["received", "enqueued", "processed", "stale", "ignored", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export type DeliveryRow = WithStatus<SqlRow<typeof deliveries>, DeliveryStatus>;

export function isDeliveryStatus(s: unknown): s is DeliveryStatus {
	return (DELIVERY_STATUSES as readonly unknown[]).includes(s);
}

/** What a send to the queue needs. */
export type DeliveryPointerRow = Pick<DeliveryRow, "id" | "provider" | "message_id">;

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
	"secret_position",
] as const satisfies readonly (keyof DeliveryRow)[];

// --- ingress (src/ingress/inbox.ts) ---

// A duplicate writes only columns no index holds, so SQLite rewrites the row and nothing else
// (one row written: what Workers Free's daily row budget counts). In SET, every column reads the
// row as it was before this statement.
const RECORD_SQL = `
INSERT INTO deliveries (provider, message_id, event, status, raw_body, body_bytes, provider_attempt,
  resource_type, resource_wallet, resource_id, resource_version, received_at, status_at, send_token,
  send_token_at, attempt_ref, headers, note, event_at, secret_position, processed_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?15, ?9, ?10, ?11, ?11, ?12, ?11, ?14, ?16, ?17, ?18, ?19,
  CASE WHEN ?4 = 'ignored' THEN ?11 END)
ON CONFLICT (provider, message_id) DO UPDATE SET
  duplicates = duplicates + 1,
  last_duplicate_at = excluded.received_at,
  provider_attempt = max(coalesce(provider_attempt, 0), coalesce(excluded.provider_attempt, 0)),
  send_token = CASE WHEN status = 'received' AND (send_token IS NULL OR send_token_at <= ?13)
    THEN ?12 ELSE send_token END,
  send_token_at = CASE WHEN status = 'received' AND (send_token IS NULL OR send_token_at <= ?13)
    THEN ?11 ELSE send_token_at END
RETURNING id, status, duplicates, coalesce(send_token = ?12, 0) AS may_send`;

/**
 * The providers' recovery path (docs/design.md, delivery statuses): a re-send of a `failed` or `ignored` row
 * takes the body and headers as re-sent and goes back to `received` (or stays `ignored` if it
 * still models nothing). Only the request whose statement moves the row holds the send token, so
 * concurrent re-sends send once.
 */
const REOPEN_SQL = `
UPDATE deliveries SET status = ?3, status_at = ?4, event = ?5, raw_body = ?6, body_bytes = ?7, headers = ?8,
  note = ?9, resource_type = ?10, resource_wallet = ?11, resource_id = ?12, resource_version = ?13, event_at = ?14,
  send_token = ?15, send_token_at = ?4, processed_at = CASE WHEN ?3 = 'ignored' THEN ?4 END
WHERE provider = ?1 AND message_id = ?2 AND status IN ('failed', 'ignored')
RETURNING id, status, duplicates, coalesce(send_token = ?15, 0) AS may_send`;

/** Re-opens a `failed`/`ignored` row with what was re-sent (rows: RecordRow; none if another request did). */
export function reopenStatement(db: D1Database, d: NewDelivery): D1PreparedStatement {
	return db
		.prepare(REOPEN_SQL)
		.bind(
			d.provider,
			d.message_id,
			d.status,
			d.received_at,
			d.event,
			d.raw_body,
			d.body_bytes,
			d.headers,
			d.note,
			d.resource_type,
			d.resource_wallet,
			d.resource_id,
			d.resource_version,
			d.event_at,
			d.send_token,
		);
}

/** The columns a new delivery is written with; on a duplicate only the counters move (and a re-open). */
export type NewDelivery = Pick<
	DeliveryRow,
	| "provider"
	| "message_id"
	| "event"
	| "status"
	| "raw_body"
	| "body_bytes"
	| "provider_attempt"
	| "resource_type"
	| "resource_wallet"
	| "resource_id"
	| "resource_version"
	| "received_at"
	| "send_token"
	| "attempt_ref"
	| "headers"
	| "note"
	| "event_at"
	| "secret_position"
>;

export type RecordRow = Pick<DeliveryRow, "id" | "status" | "duplicates"> & { may_send: number };

/**
 * Insert or count a duplicate, and say whether this request holds the send token (rows: RecordRow).
 * A duplicate takes the token over only if the row is still `received` and the token is free or
 * was taken at or before `leaseBefore`. A `failed`/`ignored` row is re-opened apart (reopenStatement).
 */
export function recordStatement(db: D1Database, d: NewDelivery, leaseBefore: number): D1PreparedStatement {
	return db
		.prepare(RECORD_SQL)
		.bind(
			d.provider,
			d.message_id,
			d.event,
			d.status,
			d.raw_body,
			d.body_bytes,
			d.provider_attempt,
			d.resource_type,
			d.resource_id,
			d.resource_version,
			d.received_at,
			d.send_token,
			leaseBefore,
			d.attempt_ref,
			d.resource_wallet,
			d.headers,
			d.note,
			d.event_at,
			d.secret_position,
		);
}

export interface EnqueuedMark {
	id: number;
	/** Answer latency of a new delivery (the ack-latency alert reads it); null for re-sends. */
	ackMs: number | null;
}

/** After a successful send. The consumer may already have moved the row on; never move it back. */
export function markEnqueuedStatement(
	db: D1Database,
	marks: readonly EnqueuedMark[],
	nowMs: number,
): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE deliveries SET
         status = CASE WHEN status IN ('received', 'enqueued') THEN 'enqueued' ELSE status END,
         status_at = CASE WHEN status IN ('received', 'enqueued') THEN ?1 ELSE status_at END,
         send_token = NULL, ack_ms = coalesce(j.ack, ack_ms)
       FROM (SELECT value->>'id' AS id, value->>'ackMs' AS ack FROM json_each(?2)) AS j
       WHERE deliveries.id = j.id`,
		)
		.bind(nowMs, JSON.stringify(marks));
}

export function markEnqueued(db: D1Database, marks: readonly EnqueuedMark[], nowMs: number): Promise<D1Result> {
	return markEnqueuedStatement(db, marks, nowMs).run();
}

/** After a failed send: free the token so the provider's next retry re-sends at once. */
export function releaseSendToken(db: D1Database, id: number): Promise<D1Result> {
	return db.prepare(`UPDATE deliveries SET send_token = NULL WHERE id = ?1 AND status = 'received'`).bind(id).run();
}

// --- the consumer (src/apply/consumer.ts) ---

export type StoredDelivery = Pick<
	DeliveryRow,
	"id" | "provider" | "message_id" | "raw_body" | "archived_at" | "headers"
>;

/** Loads stored deliveries in id order while their bodies total at most `maxBytes` (always at least one). */
export async function loadDeliveryChunk(db: D1Database, idsJson: string, maxBytes: number): Promise<StoredDelivery[]> {
	const { results } = await db
		.prepare(`
SELECT d.id, d.provider, d.message_id, d.raw_body, d.archived_at, d.headers
FROM deliveries AS d
JOIN (SELECT id, body_bytes, sum(body_bytes) OVER (ORDER BY id) AS upto
      FROM deliveries WHERE id IN (SELECT value FROM json_each(?1))) AS w ON w.id = d.id
WHERE w.upto <= ?2 OR w.upto = w.body_bytes
ORDER BY d.id`)
		.bind(idsJson, maxBytes)
		.all<StoredDelivery>();
	return results;
}

/**
 * A second pointer to a delivery already decided (a sweep re-send of a slow `enqueued` row, a
 * queue redelivery) must not re-decide it: `processed` stays `processed` even after a newer
 * version moved state on. `failed` and `ignored` stay open: a re-send reopens them, and a late
 * dead letter must not win over the pointer that heals the row. An admin replay sets `enqueued`.
 */
const SETTLED = "('processed', 'stale')";

/**
 * A delivery is `processed` only when the state now holds what it carried (version, status and
 * content); otherwise `stale`, with note `same_version` when it lost a tie (docs/design.md,
 * statuses). In the apply batch after upsertResources (src/db/resources.ts), whose result it reads.
 * `rowsJson`: `{ref, provider, type, wallet, id, version, status, data}`.
 */
export function markApplied(db: D1Database, rowsJson: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(`
UPDATE deliveries SET
  status = CASE WHEN r.version = j.version AND r.status = j.status AND r.data = j.data THEN 'processed' ELSE 'stale' END,
  note = CASE WHEN r.version = j.version AND NOT (r.status = j.status AND r.data = j.data) THEN 'same_version'
    ELSE deliveries.note END,
  status_at = ?2, processed_at = ?2, attempts = attempts + 1, last_error = NULL, send_token = NULL
FROM (SELECT value->>'ref' AS ref, value->>'provider' AS provider, value->>'type' AS type,
             coalesce(value->>'wallet', '') AS wallet, value->>'id' AS rid, value->>'version' AS version,
             value->>'status' AS status, value->'data' AS data
      FROM json_each(?1)) AS j
JOIN resources AS r ON r.provider = j.provider AND r.type = j.type AND r.wallet = j.wallet AND r.id = j.rid
WHERE deliveries.id = j.ref AND deliveries.status NOT IN ${SETTLED}`)
		.bind(rowsJson, nowMs);
}

/** `idsJson`: the delivery ids whose event carries no resource. */
export function markIgnored(db: D1Database, idsJson: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(`
UPDATE deliveries SET status = 'ignored', status_at = ?2, processed_at = ?2, attempts = attempts + 1,
  last_error = NULL, send_token = NULL
WHERE id IN (SELECT value FROM json_each(?1)) AND status NOT IN ${SETTLED}`)
		.bind(idsJson, nowMs);
}

/**
 * `rowsJson`: `{ref, note}` of deliveries whose resource lives in another shard (src/db/shards.ts):
 * settled here as `ignored` with the note, their state sent to the resource's shard instead.
 */
export function markRehomed(db: D1Database, rowsJson: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(`
UPDATE deliveries SET status = 'ignored', status_at = ?2, processed_at = ?2, attempts = attempts + 1,
  last_error = NULL, send_token = NULL, note = j.note
FROM (SELECT value->>'ref' AS ref, value->>'note' AS note FROM json_each(?1)) AS j
WHERE deliveries.id = j.ref AND deliveries.status NOT IN ${SETTLED}`)
		.bind(rowsJson, nowMs);
}

/** `rowsJson`: `{ref, error}` of poison deliveries. */
export function markFailed(db: D1Database, rowsJson: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(`
UPDATE deliveries SET status = 'failed', status_at = ?2, attempts = attempts + 1,
  last_error = j.error, send_token = NULL, processed_at = NULL
FROM (SELECT value->>'ref' AS ref, value->>'error' AS error FROM json_each(?1)) AS j
WHERE deliveries.id = j.ref AND deliveries.status NOT IN ${SETTLED}`)
		.bind(rowsJson, nowMs);
}

/** Keeps the last error visible on rows being retried. */
export function noteLastError(db: D1Database, idsJson: string, error: string): Promise<D1Result> {
	return db
		.prepare("UPDATE deliveries SET last_error = ?2 WHERE id IN (SELECT value FROM json_each(?1))")
		.bind(idsJson, error)
		.run();
}

/** Deliveries whose queue retries are exhausted become `failed`, visible and replayable. */
export function markDeadLettered(db: D1Database, ids: readonly number[], nowMs: number): Promise<D1Result> {
	return db
		.prepare(
			`UPDATE deliveries SET status = 'failed', status_at = ?2, send_token = NULL, processed_at = NULL,
         last_error = coalesce(last_error, 'queue retries exhausted')
       WHERE id IN (SELECT value FROM json_each(?1)) AND status IN ('received', 'enqueued')`,
		)
		.bind(JSON.stringify(ids), nowMs)
		.run();
}

// --- the sweep and replay (src/sweep/sweep.ts, src/queue/replay.ts) ---

/**
 * Takes the send token of at most `limit` rows `received` and then `enqueued` whose status is
 * older than `staleBefore` and whose token is free or older than `leaseBefore`, oldest first. On
 * deliveries_open, which holds only rows not applied yet (processed_at NULL).
 */
export async function takeStuckDeliveries(
	db: D1Database,
	token: string,
	nowMs: number,
	staleBefore: number,
	leaseBefore: number,
	limit: number,
): Promise<DeliveryPointerRow[]> {
	const { results } = await db
		.prepare(
			`UPDATE deliveries SET send_token = ?1, send_token_at = ?2
     WHERE id IN (
       SELECT id FROM (SELECT id FROM deliveries INDEXED BY deliveries_open
         WHERE processed_at IS NULL AND status = 'received' AND status_at <= ?3
           AND (send_token IS NULL OR send_token_at <= ?4)
         ORDER BY received_at LIMIT ?5)
       UNION ALL
       SELECT id FROM (SELECT id FROM deliveries INDEXED BY deliveries_open
         WHERE processed_at IS NULL AND status = 'enqueued' AND status_at <= ?3
           AND (send_token IS NULL OR send_token_at <= ?4)
         ORDER BY received_at LIMIT ?5)
       LIMIT ?5)
     RETURNING id, provider, message_id`,
		)
		.bind(token, nowMs, staleBefore, leaseBefore, limit)
		.all<DeliveryPointerRow>();
	return results;
}

/** Frees every token `token` holds (the sweep's send failed). */
export function releaseSendTokens(db: D1Database, token: string): Promise<D1Result> {
	return db.prepare("UPDATE deliveries SET send_token = NULL WHERE send_token = ?1").bind(token).run();
}

export interface ReplaySelection {
	provider: string | null;
	messageId: string | null;
	status: string | null;
	/** Epoch ms: only deliveries received at or after it. */
	since: number | null;
}

/** Sets at most `take` replayable deliveries after id `afterId` back to `enqueued`, in id order. */
export async function replayPage(
	db: D1Database,
	nowMs: number,
	afterId: number,
	f: ReplaySelection,
	take: number,
): Promise<DeliveryPointerRow[]> {
	const { results } = await db
		.prepare(
			`UPDATE deliveries SET status = 'enqueued', status_at = ?1, send_token = NULL, processed_at = NULL
       WHERE id IN (
         SELECT id FROM deliveries
         WHERE (raw_body IS NOT NULL OR archived_at IS NOT NULL) AND id > ?2
           AND (?3 IS NULL OR provider = ?3) AND (?4 IS NULL OR message_id = ?4)
           AND (?5 IS NULL OR status = ?5) AND (?6 IS NULL OR received_at >= ?6)
         ORDER BY id LIMIT ?7)
       RETURNING id, provider, message_id`,
		)
		.bind(nowMs, afterId, f.provider, f.messageId, f.status, f.since, take)
		.all<DeliveryPointerRow>();
	return results;
}

// --- retention (src/sweep/retention.ts) ---

const PRUNABLE = "('processed', 'stale', 'ignored', 'failed')";

/** Drops at most `chunk` bodies received before `before`: of `failed` rows only when `archiving`. */
export function pruneBodies(db: D1Database, before: number, chunk: number, archiving: boolean): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE deliveries SET raw_body = NULL, headers = NULL WHERE id IN (
           SELECT id FROM deliveries WHERE received_at < ?1 AND raw_body IS NOT NULL AND status IN ${archiving ? "('failed')" : PRUNABLE} LIMIT ?2)`,
		)
		.bind(before, chunk);
}

/** Deletes at most `chunk` settled rows (dedupe keys) received before `before`. */
export function pruneDeliveries(db: D1Database, before: number, chunk: number): D1PreparedStatement {
	return db
		.prepare(
			`DELETE FROM deliveries WHERE id IN (
           SELECT id FROM deliveries WHERE received_at < ?1 AND status IN ${PRUNABLE} LIMIT ?2)`,
		)
		.bind(before, chunk);
}

// --- the archive (src/sweep/archive.ts, src/db/delivery-moves.ts) ---

// The partial index deliveries_to_archive holds exactly these rows; named, because the planner
// could otherwise pick another index and read every archived row on each tick.
export const CANDIDATES = `
SELECT d.id, d.provider, d.message_id, d.raw_body, d.status_at
FROM deliveries AS d
JOIN (SELECT id, body_bytes, sum(body_bytes) OVER (ORDER BY status_at, id) AS upto
      FROM (SELECT id, body_bytes, status_at FROM deliveries INDEXED BY deliveries_to_archive
            WHERE raw_body IS NOT NULL AND status IN ('processed', 'stale', 'ignored') AND status_at <= ?1
            ORDER BY status_at, id LIMIT ?2)) AS w ON w.id = d.id
WHERE w.upto <= ?3 OR w.upto = w.body_bytes
ORDER BY d.status_at, d.id`;

export type ArchiveCandidate = Pick<DeliveryRow, "id" | "provider" | "message_id" | "status_at"> & { raw_body: string };

/** Settled rows with a body, settled at or before `settledBefore`: at most `limit`, and `maxBytes` of bodies. */
export async function archiveCandidates(
	db: D1Database,
	settledBefore: number,
	limit: number,
	maxBytes: number,
): Promise<ArchiveCandidate[]> {
	const { results } = await db.prepare(CANDIDATES).bind(settledBefore, limit, maxBytes).all<ArchiveCandidate>();
	return results;
}

const COLUMNS = DELIVERY_COLUMNS.join(", ");
const WITHOUT_BODY = DELIVERY_COLUMNS.map((c) => (c === "raw_body" ? "NULL" : c === "archived_at" ? "?1" : c)).join(
	", ",
);

/** Deletes the rows copied to delivery_moves (the archive's rewrite, after copyToMoves). */
export function deleteMoved(db: D1Database): D1PreparedStatement {
	return db.prepare("DELETE FROM deliveries WHERE id IN (SELECT id FROM delivery_moves)");
}

/** Inserts the moved rows back, same id, without their body, archived at `nowMs` (before clearMoves). */
export function reinsertMovedWithoutBody(db: D1Database, nowMs: number): D1PreparedStatement {
	return db.prepare(`INSERT INTO deliveries (${COLUMNS}) SELECT ${WITHOUT_BODY} FROM delivery_moves`).bind(nowMs);
}

// --- reads: admin API (src/admin/views.ts), console (src/console/queries.ts), metrics, alerts ---

export type DeliveryListRow = Pick<
	DeliveryRow,
	"id" | "provider" | "message_id" | "event" | "status" | "received_at" | "attempts" | "duplicates" | "last_error"
>;

export interface DeliverySelection {
	provider: string | null;
	status: DeliveryStatus | null;
	event: string | null;
}

/** A page of deliveries, newest first, below id `below`. */
export async function deliveryPage(
	db: D1Database,
	f: DeliverySelection,
	below: number,
	take: number,
): Promise<DeliveryListRow[]> {
	const { results } = await db
		.prepare(
			`SELECT id, provider, message_id, event, status, received_at, attempts, duplicates, last_error
       FROM deliveries
       WHERE id < ?1 AND (?2 IS NULL OR provider = ?2) AND (?3 IS NULL OR status = ?3) AND (?4 IS NULL OR event = ?4)
       ORDER BY id DESC LIMIT ?5`,
		)
		.bind(below, f.provider, f.status, f.event, take)
		.all<DeliveryListRow>();
	return results;
}

/** The whole row, on the unique index (provider, message_id). */
export function deliveryRow(db: D1Database, provider: string, messageId: string): Promise<DeliveryRow | null> {
	return db
		.prepare("SELECT * FROM deliveries WHERE provider = ?1 AND message_id = ?2")
		.bind(provider, messageId)
		.first<DeliveryRow>();
}

export type DeliveryDetail = Omit<DeliveryRow, "headers" | "send_token" | "send_token_at">;

/** Named columns only: never the stored headers nor the send token. Unique index (provider, message_id). */
export function deliveryDetail(db: D1Database, provider: string, messageId: string): Promise<DeliveryDetail | null> {
	return db
		.prepare(
			`SELECT id, provider, message_id, event, status, raw_body, body_bytes, provider_attempt, attempt_ref, note,
         resource_type, resource_wallet, resource_id, resource_version, received_at, status_at, attempts,
         duplicates, last_duplicate_at, last_error, processed_at, ack_ms, event_at, archived_at
       FROM deliveries WHERE provider = ?1 AND message_id = ?2`,
		)
		.bind(provider, messageId)
		.first<DeliveryDetail>();
}

/** A message id across the listed senders: `provider IN (...)` lets the unique index serve it. */
export async function deliveriesByMessageId(
	db: D1Database,
	providersJson: string,
	messageId: string,
): Promise<DeliveryListRow[]> {
	const { results } = await db
		.prepare(
			`SELECT id, provider, message_id, event, status, received_at, attempts, duplicates, last_error FROM deliveries
       WHERE provider IN (SELECT value FROM json_each(?1)) AND message_id = ?2`,
		)
		.bind(providersJson, messageId)
		.all<DeliveryListRow>();
	return results;
}

export type ResourceDeliveryRow = Pick<
	DeliveryRow,
	"message_id" | "event" | "status" | "resource_version" | "received_at" | "processed_at" | "event_at"
>;

/** On deliveries_resource: at most `limit` deliveries that carried this resource, in version order. */
export async function deliveriesOfResource(
	db: D1Database,
	provider: string,
	type: string,
	wallet: string,
	id: string,
	limit: number,
): Promise<ResourceDeliveryRow[]> {
	const { results } = await db
		.prepare(
			`SELECT message_id, event, status, resource_version, received_at, processed_at, event_at FROM deliveries
       WHERE provider = ?1 AND resource_type = ?2 AND resource_wallet = ?3 AND resource_id = ?4
       ORDER BY resource_version, id LIMIT ${limit}`,
		)
		.bind(provider, type, wallet, id)
		.all<ResourceDeliveryRow>();
	return results;
}

/** Deliveries and duplicates per status (rows: `{status, n, d}`); its meta.size_after is the database's size. */
export function countDeliveriesByStatus(db: D1Database): D1PreparedStatement {
	return db.prepare("SELECT status, count(*) AS n, sum(duplicates) AS d FROM deliveries GROUP BY status");
}

/** The oldest delivery not applied yet (rows: `{oldest}`). */
export function oldestUnprocessed(db: D1Database): D1PreparedStatement {
	return db.prepare(
		"SELECT min(received_at) AS oldest FROM deliveries INDEXED BY deliveries_open WHERE processed_at IS NULL AND status IN ('received', 'enqueued')",
	);
}

/** Deliveries `failed` (rows: `{n}`); its meta.size_after is the database's size. */
export function countFailedDeliveries(db: D1Database): D1PreparedStatement {
	return db.prepare(
		"SELECT count(*) AS n FROM deliveries INDEXED BY deliveries_open WHERE processed_at IS NULL AND status = 'failed'",
	);
}

/** The 99th percentile of ack_ms over deliveries received since `since` (rows: `{ack_ms}`, none if no data). */
export function ackP99Since(db: D1Database, since: number): D1PreparedStatement {
	return db
		.prepare(
			`SELECT ack_ms FROM (
           SELECT ack_ms, percent_rank() OVER (ORDER BY ack_ms) AS pr FROM deliveries
           WHERE received_at >= ?1 AND ack_ms IS NOT NULL)
         WHERE pr >= 0.99 ORDER BY ack_ms LIMIT 1`,
		)
		.bind(since);
}

/** Range on deliveries_received_at; one row per (minute, status) since `since` (rows: `{minute, status, n}`). */
export function deliveriesPerMinute(db: D1Database, since: number): D1PreparedStatement {
	return db
		.prepare(
			"SELECT received_at / 60000 AS minute, status, count(*) AS n FROM deliveries WHERE received_at >= ?1 GROUP BY minute, status",
		)
		.bind(since);
}

const HOUR_MS = 60 * 60_000;

/**
 * A histogram of `value` per hour of received_at, to two significant digits (bucket = the first
 * two digits and the digit count): one index range scan and a GROUP BY, no sort of the rows, so
 * p50/p99 come out within 10% (the bucket's lower bound) at a fraction of a window function's cost.
 * Rows: `{hour, len, lead, n}` (src/console/queries.ts percentilesFromHistogram).
 */
function histogramPerHour(value: string, where: string): string {
	const v = `max(${value}, 0)`;
	return `SELECT received_at / ${HOUR_MS} AS hour, length(${v}) AS len, CAST(substr(${v}, 1, 2) AS INTEGER) AS lead,
       count(*) AS n
     FROM deliveries WHERE received_at >= ?1 AND ${where} GROUP BY hour, len, lead`;
}

/** Answer latency (ack_ms) per hour since `since`, as a histogram. */
export function ackHistogramPerHour(db: D1Database, since: number): D1PreparedStatement {
	return db.prepare(histogramPerHour("ack_ms", "ack_ms IS NOT NULL")).bind(since);
}

/** End-to-end lag (processed_at - event_at) per hour since `since`, as a histogram. */
export function lagHistogramPerHour(db: D1Database, since: number): D1PreparedStatement {
	return db
		.prepare(histogramPerHour("processed_at - event_at", "processed_at IS NOT NULL AND event_at IS NOT NULL"))
		.bind(since);
}

/**
 * Deliveries verified by a secret other than the first of their provider's list, per (provider,
 * position), since `sinceMs`: the rotation status ("when can the old secret go?"). Reads only the
 * partial index of such rows, which is empty outside a rotation.
 */
export async function olderSecretUses(
	db: D1Database,
	sinceMs: number,
): Promise<{ provider: string; secret_position: number; n: number; last: number }[]> {
	const { results } = await db
		.prepare(
			`SELECT provider, secret_position, count(*) AS n, max(received_at) AS last
       FROM deliveries INDEXED BY deliveries_older_secret
       WHERE secret_position > 0 AND received_at >= ?1 GROUP BY provider, secret_position`,
		)
		.bind(sinceMs)
		.all<{ provider: string; secret_position: number; n: number; last: number }>();
	return results;
}
