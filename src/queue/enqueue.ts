/** Sending stored deliveries to EVENTS in bulk: the sweep and replays share this path. */
import { type DeliveryPointerRow, markEnqueued } from "../db/deliveries";
import { globalId, type Shard } from "../db/shards";
import type { Env } from "../env";
import type { ProviderName } from "../providers/model";
import { deliveryMessage } from "./messages";

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
