import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import worker from "../../src/index";
import type { DeliveryMessage, QueueMessage } from "../../src/queue/messages";
import { QUEUE_NAMES } from "../../src/queue/messages";
import { type OrderFields, orderEvent, signedRequest } from "./bloobank";
import { call, type Harness, harness } from "./worker";

let seq = 0;

/** Delivers one order event through ingress and returns the pointer the queue got. */
export async function ingest(h: Harness, messageId: string, o: OrderFields): Promise<DeliveryMessage> {
	const before = h.events.sent.length;
	const res = await call(h, await signedRequest(orderEvent(messageId, o)));
	if (res.status !== 200) throw new Error(`ingest answered ${res.status}`);
	const msg = h.events.sent[before];
	if (msg?.kind !== "delivery") throw new Error("ingest sent no pointer");
	return msg;
}

/** Runs the EVENTS consumer over these messages, as the Queues runtime would. */
export async function consume(h: Harness, bodies: QueueMessage[], queue: string = QUEUE_NAMES.events, attempts = 1) {
	const batch = createMessageBatch<QueueMessage>(
		queue,
		bodies.map((body) => ({ id: `m-${++seq}`, timestamp: new Date(), attempts, body })),
	);
	// The test runtime's result drops retry options; record the delays asked for here.
	const delays: (number | undefined)[] = [];
	for (const m of batch.messages) {
		const retry = m.retry.bind(m);
		Object.defineProperty(m, "retry", {
			value: (options?: QueueRetryOptions) => {
				delays.push(options?.delaySeconds);
				retry(options);
			},
		});
	}
	const ctx = createExecutionContext();
	await worker.queue(batch, h.env, ctx);
	return { ...(await getQueueResult(batch, ctx)), delays };
}

export { harness };
