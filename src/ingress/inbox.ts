/**
 * The inbox: the one D1 statement that makes a delivery durable and tells new from duplicate
 * (docs/design.md invariants 2-4), and the bookkeeping around sending its pointer to the queue.
 * The statement goes to D1 in one round trip, alone or batched with earlier requests' marks.
 *
 * Who sends a row to the queue is decided by a send token written in the same statement: the
 * inserter holds it; a duplicate takes it over only if the row is still `received` and the token
 * is free or older than SEND_LEASE_MS (its holder crashed or its send failed). So twenty
 * concurrent copies of one delivery produce one queue message, and a copy arriving after a failed
 * send re-sends it.
 *
 * A re-send of a row that is `failed` or `ignored` is the providers' own recovery path (fix, then
 * replay from their dashboard, same message id): it moves the row back to `received`, with the
 * body and headers as re-sent, and this request sends it (docs/design.md, statuses).
 */
import type { NormalisedEvent } from "../providers/types";

/**
 * A send takes milliseconds; a holder that has not sent within this long crashed. Shorter than
 * the earliest provider retry (BlooBank's second attempt: ~10 s, jittered down to 5 s), so a
 * retry after a crash between the commit and the send re-sends at once instead of waiting for
 * the sweep. A slow holder racing a re-send only costs a duplicate queue message, which the
 * consumer dedupes.
 */
export const SEND_LEASE_MS = 4_000;

export type RecordOutcome =
	| { kind: "new"; id: number; mustSend: boolean }
	| { kind: "duplicate"; id: number; mustSend: boolean; status: string };

interface RecordRow {
	id: number;
	status: string;
	duplicates: number;
	may_send: number;
}

// In SET, every column reads the row as it was before this statement.
const REOPEN = "status IN ('failed', 'ignored')";
const TAKE_TOKEN = `(status = 'received' AND (send_token IS NULL OR send_token_at <= ?13))
    OR (${REOPEN} AND excluded.status = 'received')`;

const RECORD_SQL = `
INSERT INTO deliveries (provider, message_id, event, status, raw_body, body_bytes, provider_attempt,
  resource_type, resource_wallet, resource_id, resource_version, received_at, status_at, send_token,
  send_token_at, attempt_ref, headers, note, event_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?15, ?9, ?10, ?11, ?11, ?12, ?11, ?14, ?16, ?17, ?18)
ON CONFLICT (provider, message_id) DO UPDATE SET
  duplicates = duplicates + 1,
  last_duplicate_at = excluded.received_at,
  provider_attempt = max(coalesce(provider_attempt, 0), coalesce(excluded.provider_attempt, 0)),
  send_token = CASE WHEN ${TAKE_TOKEN} THEN ?12 ELSE send_token END,
  send_token_at = CASE WHEN ${TAKE_TOKEN} THEN ?11 ELSE send_token_at END,
  status = CASE WHEN ${REOPEN} THEN excluded.status ELSE status END,
  status_at = CASE WHEN ${REOPEN} THEN excluded.status_at ELSE status_at END,
  event = CASE WHEN ${REOPEN} THEN excluded.event ELSE event END,
  raw_body = CASE WHEN ${REOPEN} THEN excluded.raw_body ELSE raw_body END,
  body_bytes = CASE WHEN ${REOPEN} THEN excluded.body_bytes ELSE body_bytes END,
  headers = CASE WHEN ${REOPEN} THEN excluded.headers ELSE headers END,
  note = CASE WHEN ${REOPEN} THEN excluded.note ELSE note END,
  resource_type = CASE WHEN ${REOPEN} THEN excluded.resource_type ELSE resource_type END,
  resource_wallet = CASE WHEN ${REOPEN} THEN excluded.resource_wallet ELSE resource_wallet END,
  resource_id = CASE WHEN ${REOPEN} THEN excluded.resource_id ELSE resource_id END,
  resource_version = CASE WHEN ${REOPEN} THEN excluded.resource_version ELSE resource_version END,
  event_at = CASE WHEN ${REOPEN} THEN excluded.event_at ELSE event_at END
RETURNING id, status, duplicates, coalesce(send_token = ?12, 0) AS may_send`;

/** One D1 round trip: insert or count a duplicate, and say whether this request must send. */
export async function recordDelivery(
	db: D1Database,
	event: NormalisedEvent,
	rawBody: string,
	bodyBytes: number,
	headersJson: string | null,
	nowMs: number,
): Promise<RecordOutcome> {
	const token = crypto.randomUUID();
	const resource = event.resource;
	const upsert = db
		.prepare(RECORD_SQL)
		.bind(
			event.provider,
			event.messageId,
			event.event,
			resource ? "received" : "ignored",
			rawBody,
			bodyBytes,
			event.attempt,
			resource?.type ?? null,
			resource?.id ?? null,
			resource?.version ?? null,
			nowMs,
			resource ? token : null,
			nowMs - SEND_LEASE_MS,
			event.attemptRef,
			resource ? (resource.wallet ?? "") : null,
			headersJson,
			event.note,
			event.eventAt,
		);
	// Marks of earlier requests ride along in the same round trip (see takePendingMarks).
	const marks = takePendingMarks(db);
	const row =
		marks.length === 0
			? await upsert.first<RecordRow>()
			: (await db.batch<RecordRow>([markEnqueuedStatement(db, marks, nowMs), upsert]))[1]?.results[0];
	if (!row) throw new Error("inbox upsert returned no row");
	const mustSend = row.may_send === 1;
	return row.duplicates === 0
		? { kind: "new", id: row.id, mustSend }
		: { kind: "duplicate", id: row.id, mustSend, status: row.status };
}

export interface EnqueuedMark {
	id: number;
	/** Answer latency of a new delivery (the ack-latency alert reads it); null for re-sends. */
	ackMs: number | null;
}

/** After a successful send. The consumer may already have moved the row on; never move it back. */
export function markEnqueued(db: D1Database, marks: readonly EnqueuedMark[], nowMs: number): Promise<D1Result> {
	return markEnqueuedStatement(db, marks, nowMs).run();
}

function markEnqueuedStatement(db: D1Database, marks: readonly EnqueuedMark[], nowMs: number): D1PreparedStatement {
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

/**
 * Marks from requests of one isolate, written together instead of one UPDATE per delivery, off
 * the answer path. The next inbox write of the isolate takes the waiting marks into its own
 * round trip (recordDelivery); what no write takes within FLUSH_MS (or MAX_MARKS) the request
 * that opened the buffer flushes, in its own waitUntil. Requests share only plain data, never
 * a promise, because a Worker must not await I/O started by another request. A lost mark costs
 * nothing but a status: the consumer moves `received` rows on as well, and the sweep re-sends
 * rows still `received` (the consumer dedupes).
 */
export const FLUSH_MS = 20;
/** The longest a buffer's owner keeps its waitUntil open while inbox writes keep taking its marks. */
export const MAX_HOLD_MS = 1_000;
export const MAX_MARKS = 100;

interface MarkBuffer {
	marks: EnqueuedMark[];
	lastPushAt: number;
}

const openBuffers = new Map<D1Database, MarkBuffer>();

/** Returns the flush to wait for when this call opened the buffer, else null (someone else flushes). */
export function markEnqueuedSoon(db: D1Database, mark: EnqueuedMark, nowMs: number): Promise<unknown> | null {
	const open = openBuffers.get(db);
	if (open && open.marks.length < MAX_MARKS) {
		open.marks.push(mark);
		open.lastPushAt = Date.now();
		return null;
	}
	const buffer: MarkBuffer = { marks: [mark], lastPushAt: Date.now() };
	openBuffers.set(db, buffer);
	return (async () => {
		const openedAt = Date.now();
		// A mark pushed less than FLUSH_MS ago is left for the next inbox write to take, as long as
		// writes keep coming (bounded by MAX_HOLD_MS); an empty buffer means they took everything.
		do await new Promise((resolve) => setTimeout(resolve, FLUSH_MS));
		while (buffer.marks.length > 0 && Date.now() - buffer.lastPushAt < FLUSH_MS && Date.now() - openedAt < MAX_HOLD_MS);
		if (openBuffers.get(db) === buffer) openBuffers.delete(db);
		return buffer.marks.length === 0 ? null : markEnqueued(db, buffer.marks, nowMs);
	})();
}

/**
 * Empties the open buffer for the caller's inbox write, which writes these marks in the same
 * batch: one round trip for the new delivery and the marks, where there would be two. The
 * buffer stays open, so its owner still flushes whatever is appended after.
 */
function takePendingMarks(db: D1Database): EnqueuedMark[] {
	return openBuffers.get(db)?.marks.splice(0) ?? [];
}

/** After a failed send: free the token so the provider's next retry re-sends at once. */
export function releaseSendToken(db: D1Database, id: number): Promise<D1Result> {
	return db.prepare(`UPDATE deliveries SET send_token = NULL WHERE id = ?1 AND status = 'received'`).bind(id).run();
}
