/** Sending stored deliveries to EVENTS in bulk: the sweep and replays share this path. */
import { type DeliveryPointerRow, markEnqueued } from "../db/deliveries";
import { globalId, type Shard } from "../db/shards";
import type { Env } from "../env";
import type { ProviderName } from "../providers/model";
import { deliveryMessage, type QueueMessage, type SnapshotMessage } from "./messages";

export type { DeliveryPointerRow };

/** Queues cap sendBatch at 100 messages. */
export const SEND_BATCH_LIMIT = 100;

/** Rows of one shard: their pointers carry ids that name it (src/db/shards.ts). */
export async function sendPointers(
	env: Env,
	shard: Shard,
	rows: readonly DeliveryPointerRow[],
	nowMs: number,
): Promise<void> {
	for (let i = 0; i < rows.length; i += SEND_BATCH_LIMIT) {
		const chunk = rows.slice(i, i + SEND_BATCH_LIMIT);
		await env.EVENTS.sendBatch(
			chunk.map((r) => ({
				body: deliveryMessage(globalId(shard.index, r.id), r.provider as ProviderName, r.message_id),
			})),
		);
		await markEnqueued(
			shard.db,
			chunk.map((r) => ({ id: r.id, ackMs: null })),
			nowMs,
		);
	}
}

/** Queue sendBatch caps a call at 256 KB; stay well under it. */
const SEND_BATCH_BYTES = 200_000;
/** Queues cap a message at 128 KB (128,000 bytes); the rest is room for the serialization's own framing. */
export const MAX_SNAPSHOT_MESSAGE_BYTES = 120_000;

/**
 * An upper bound of a message's size on the queue. Messages are V8-serialized: a string holding any
 * character above U+00FF is stored with two bytes per character, so one such character in a large
 * ASCII `metadata` doubles it. The larger of that and the UTF-8 size is never below the real size.
 */
export function messageBytes(message: SnapshotMessage): number {
	const json = JSON.stringify(message);
	const utf8 = new TextEncoder().encode(json).byteLength;
	return /[\u0100-\uffff]/.test(json) ? Math.max(utf8, 2 * json.length) : utf8;
}

/**
 * Snapshots (reconciliation's, and states moved to their resource's shard) to EVENTS, in batches
 * under the queue's limits; returns those too large for one message, unsent.
 */
export async function sendSnapshotMessages(
	queue: Queue<QueueMessage>,
	bodies: readonly SnapshotMessage[],
): Promise<{ sent: number; tooLarge: SnapshotMessage[] }> {
	let batch: { body: SnapshotMessage }[] = [];
	let bytes = 0;
	let sent = 0;
	const tooLarge: SnapshotMessage[] = [];
	for (const body of bodies) {
		const size = messageBytes(body);
		if (size > MAX_SNAPSHOT_MESSAGE_BYTES) {
			tooLarge.push(body);
			continue;
		}
		if (batch.length > 0 && (bytes + size > SEND_BATCH_BYTES || batch.length === SEND_BATCH_LIMIT)) {
			await queue.sendBatch(batch);
			sent += batch.length;
			batch = [];
			bytes = 0;
		}
		batch.push({ body });
		bytes += size;
	}
	if (batch.length > 0) await queue.sendBatch(batch);
	return { sent: sent + batch.length, tooLarge };
}
