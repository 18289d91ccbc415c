/**
 * Queue, cron and variable names exist once in wrangler.toml (docs/design.md, "Queue and cron
 * names"): these tests fail when the file and the code disagree, and an unknown queue's batch is
 * retried, never acked.
 */
import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { describe, expect, expectTypeOf, it } from "vitest";
import { MOVED_STATE_LAST_ATTEMPT } from "../../src/apply/consumer";
import { DAILY_RECONCILE_CRON, SWEEP_CRON } from "../../src/cron";
import { ENV_VAR_NAMES, type UnlistedEnvVars } from "../../src/env";
import worker from "../../src/index";
import { QUEUE_NAMES, type QueueMessage } from "../../src/queue/messages";
import { harness } from "../support/worker";

const declared = env.TEST_WRANGLER_NAMES;
const known: string[] = Object.values(QUEUE_NAMES);

async function dispatch(queue: string) {
	const batch = createMessageBatch<QueueMessage>(queue, [
		{ id: "probe-1", timestamp: new Date(), attempts: 1, body: { kind: "probe" } as unknown as QueueMessage },
	]);
	const ctx = createExecutionContext();
	await worker.queue(batch, harness().env, ctx);
	return getQueueResult(batch, ctx);
}

describe("wrangler.toml and the code name the same things", () => {
	it("the producer bindings send to the queues the code consumes", () => {
		expect(declared.producers).toEqual(
			expect.arrayContaining([
				{ binding: "EVENTS", queue: QUEUE_NAMES.events },
				{ binding: "RECONCILE", queue: QUEUE_NAMES.reconcile },
			]),
		);
		expect(declared.producers).toHaveLength(2);
	});

	it("every consumed queue is one the code names, and every name the code knows is consumed", () => {
		expect(declared.consumers.map((c) => c.queue).sort()).toEqual([...known].sort());
	});

	it("each queue's dead-letter queue is the one the code names, and has its own consumer", () => {
		const dlq = Object.fromEntries(declared.consumers.map((c) => [c.queue, c.deadLetterQueue]));
		expect(dlq).toEqual({
			[QUEUE_NAMES.events]: QUEUE_NAMES.eventsDeadLetter,
			[QUEUE_NAMES.eventsDeadLetter]: null,
			[QUEUE_NAMES.reconcile]: QUEUE_NAMES.reconcileDeadLetter,
			[QUEUE_NAMES.reconcileDeadLetter]: null,
		});
	});

	it("the events dead-letter consumer's last attempt is its max_retries (a moved state retried past it is gone)", () => {
		const consumer = declared.consumers.find((c) => c.queue === QUEUE_NAMES.eventsDeadLetter);
		expect(consumer?.maxRetries).toBe(MOVED_STATE_LAST_ATTEMPT);
	});

	it.each(Object.values(QUEUE_NAMES))(
		"a batch from %s is handled by its consumer, not retried as unknown",
		async (q) => {
			const result = await dispatch(q);
			expect(result.retryBatch.retry).toBe(false);
			expect(result.ackAll || result.explicitAcks.includes("probe-1")).toBe(true);
		},
	);

	it("the crons are the two the scheduled handler tells apart", () => {
		expect([...declared.crons].sort()).toEqual([SWEEP_CRON, DAILY_RECONCILE_CRON].sort());
		expect(SWEEP_CRON).not.toBe(DAILY_RECONCILE_CRON);
	});

	it("every [vars] key is a variable the code reads", () => {
		expect(declared.vars.length).toBeGreaterThan(0);
		expect(declared.vars.filter((v) => !(ENV_VAR_NAMES as readonly string[]).includes(v))).toEqual([]);
		// ENV_VAR_NAMES lists every string variable of Env (checked by the type checker).
		expectTypeOf<UnlistedEnvVars>().toBeNever();
	});
});

describe("a queue the code does not know", () => {
	it("a batch from an unknown queue is retried, not acked", async () => {
		const result = await dispatch("webhook-events-renamed");
		expect(result.retryBatch.retry).toBe(true);
		expect(result.ackAll).toBe(false);
		expect(result.explicitAcks).toEqual([]);
	});
});
