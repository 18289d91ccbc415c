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
 * body and headers as re-sent, and this request sends it (docs/design.md, delivery statuses). That path
 * takes a second round trip; a plain duplicate stays one round trip and one row written.
 */
import {
	type EnqueuedMark,
	markEnqueued,
	markEnqueuedStatement,
	type NewDelivery,
	type RecordRow,
	recordStatement,
	reopenStatement,
} from "../db/deliveries";
import type { NormalisedEvent } from "../providers/types";

/**
 * A send takes milliseconds; a holder that has not sent within this long crashed. Shorter than
 * the earliest provider retry (docs/providers.md 1.1: a second attempt after ~10 s,
 * jittered down to 5 s), so a
 * retry after a crash between the commit and the send re-sends at once instead of waiting for
 * the sweep. A slow holder racing a re-send only costs a duplicate queue message, which the
 * consumer dedupes.
 */
export const SEND_LEASE_MS = 4_000;

export type RecordOutcome =
	| { kind: "new"; id: number; mustSend: boolean }
	| { kind: "duplicate"; id: number; mustSend: boolean; status: string };

/** One D1 round trip (two to re-open a failed or ignored row): insert or count a duplicate, and say whether this request must send. */
export async function recordDelivery(
	db: D1Database,
	event: NormalisedEvent,
	rawBody: string,
	bodyBytes: number,
	headersJson: string | null,
	nowMs: number,
	/** Which configured secret verified it (0-based position), for the rotation status. */
	secretPosition: number | null = null,
): Promise<RecordOutcome> {
	const token = crypto.randomUUID();
	const resource = event.resource;
	const delivery: NewDelivery = {
		provider: event.provider,
		message_id: event.messageId,
		event: event.event,
		status: resource ? "received" : "ignored",
		raw_body: rawBody,
		body_bytes: bodyBytes,
		provider_attempt: event.attempt,
		resource_type: resource?.type ?? null,
		resource_wallet: resource ? (resource.wallet ?? "") : null,
		resource_id: resource?.id ?? null,
		resource_version: resource?.version ?? null,
		received_at: nowMs,
		send_token: resource ? token : null,
		attempt_ref: event.attemptRef,
		headers: headersJson,
		note: event.note,
		event_at: event.eventAt,
		secret_position: secretPosition,
	};
	const upsert = recordStatement(db, delivery, nowMs - SEND_LEASE_MS);
	// Marks of earlier requests ride along in the same round trip (see takePendingMarks).
	const marks = takePendingMarks(db);
	const row =
		marks.length === 0
			? await upsert.first<RecordRow>()
			: (await db.batch<RecordRow>([markEnqueuedStatement(db, marks, nowMs), upsert]))[1]?.results[0];
	if (!row) throw new Error("inbox upsert returned no row");
	if (row.duplicates === 0) return { kind: "new", id: row.id, mustSend: row.may_send === 1 };
	if (row.status === "failed" || row.status === "ignored") {
		// The rare re-open (a provider's dashboard replay) costs a second round trip, so that the
		// common duplicate writes no indexed column.
		const reopened = await reopenStatement(db, delivery).first<RecordRow>();
		if (reopened)
			return { kind: "duplicate", id: reopened.id, mustSend: reopened.may_send === 1, status: reopened.status };
	}
	return { kind: "duplicate", id: row.id, mustSend: row.may_send === 1, status: row.status };
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
