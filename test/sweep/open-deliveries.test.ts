/**
 * The sweep, the failed-deliveries alert and the oldest-unprocessed figure read only the rows not
 * applied yet, through the partial index deliveries_open (processed_at IS NULL), which costs no
 * row written when a delivery is marked `enqueued` or applied (test/scale/rows-written.test.ts).
 * That holds only if every way into `received`, `enqueued` or `failed` clears processed_at and
 * every way into `processed`, `stale` or `ignored` sets it; a row on the wrong side would never
 * be re-sent (docs/design.md invariant 3) or never be counted as failed.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { getConfig, getShards } from "../../src/env";
import { readSignals } from "../../src/sweep/alerts";
import { resendStuckDeliveries } from "../../src/sweep/sweep";
import { consume, ingest } from "../support/apply";
import { orderEvent, signedRequest } from "../support/bloobank";
import { call, type Harness, harness, resetDb, rows } from "../support/worker";

beforeEach(resetDb);

const ADMIN_TOKEN = "open-deliveries-admin-token-0123456789abcdef";

function post(h: Harness, path: string): Promise<Response> {
	return call(
		h,
		new Request(`https://receiver.test${path}`, {
			method: "POST",
			headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
			body: "{}",
		}),
	);
}

async function openness(): Promise<{ message_id: string; status: string; open: number }[]> {
	return rows("SELECT message_id, status, processed_at IS NULL AS open FROM deliveries ORDER BY message_id");
}

describe("deliveries_open holds exactly the deliveries not applied", () => {
	it("every transition leaves processed_at NULL for received, enqueued and failed rows and set for settled ones", async () => {
		const h = harness({ ADMIN_TOKEN });
		// received: its send failed
		h.events.fail = true;
		await call(h, await signedRequest(orderEvent("a-received", { id: "o-a", ordVersion: 1, status: "PENDING" })));
		h.events.fail = false;
		// enqueued, not applied yet
		await ingest(h, "b-enqueued", { id: "o-b", ordVersion: 1, status: "PENDING" });
		// processed, then replayed: enqueued again
		await consume(h, [await ingest(h, "c-replayed", { id: "o-c", ordVersion: 1, status: "PENDING" })]);
		expect((await post(h, "/admin/deliveries/bloobank/c-replayed/replay")).status).toBe(202);
		// processed
		await consume(h, [await ingest(h, "d-processed", { id: "o-d", ordVersion: 2, status: "PENDING" })]);
		// stale
		await consume(h, [await ingest(h, "e-stale", { id: "o-d", ordVersion: 1, status: "PENDING" })]);
		// ignored at ingress (an event no rule models)
		const balance = { event: "balance.updated", messageId: "f-ignored", data: { wallet: "w1", balance: 10 } };
		expect((await call(h, await signedRequest(balance))).status).toBe(200);
		// failed (dead-lettered), then re-sent by the provider: received again, and applied
		const g = await ingest(h, "g-failed", { id: "o-g", ordVersion: 1, status: "PENDING" });
		await consume(h, [g], "webhook-events-dlq");
		const h1 = await ingest(h, "h-failed-then-resent", { id: "o-h", ordVersion: 1, status: "PENDING" });
		await consume(h, [h1], "webhook-events-dlq");
		const before = h.events.sent.length;
		await call(
			h,
			await signedRequest(orderEvent("h-failed-then-resent", { id: "o-h", ordVersion: 1, status: "PENDING" })),
		);
		await consume(h, h.events.sent.slice(before));

		expect(await openness()).toEqual([
			{ message_id: "a-received", status: "received", open: 1 },
			{ message_id: "b-enqueued", status: "enqueued", open: 1 },
			{ message_id: "c-replayed", status: "enqueued", open: 1 },
			{ message_id: "d-processed", status: "processed", open: 0 },
			{ message_id: "e-stale", status: "stale", open: 0 },
			{ message_id: "f-ignored", status: "ignored", open: 0 },
			{ message_id: "g-failed", status: "failed", open: 1 },
			{ message_id: "h-failed-then-resent", status: "processed", open: 0 },
		]);
	});

	it("a replayed delivery whose queue message is lost is re-sent by the sweep", async () => {
		const h = harness({ ADMIN_TOKEN });
		await consume(h, [await ingest(h, "lost-1", { id: "o-lost", ordVersion: 1, status: "PENDING" })]);
		expect((await post(h, "/admin/deliveries/bloobank/lost-1/replay")).status).toBe(202);
		// The replay's pointer never reaches the consumer.
		const sent = h.events.sent.length;
		expect(await resendStuckDeliveries(h.env, getConfig(h.env), Date.now() + 301_000)).toBe(1);
		expect(h.events.sent.length).toBe(sent + 1);
	});

	it("the failed-deliveries signal counts failed rows only, and the oldest unprocessed is the oldest received or enqueued", async () => {
		const h = harness();
		const t0 = Date.now();
		await consume(h, [await ingest(h, "done-1", { id: "o-done", ordVersion: 1, status: "PENDING" })]);
		await consume(
			h,
			[await ingest(h, "dead-1", { id: "o-dead", ordVersion: 1, status: "PENDING" })],
			"webhook-events-dlq",
		);
		await ingest(h, "wait-1", { id: "o-wait", ordVersion: 1, status: "PENDING" });
		const signals = await readSignals(getShards(h.env), t0 + 60_000, null);
		expect(signals).toMatchObject({ failedDeliveries: 1 });
		const [oldest] = await rows<{ received_at: number }>(
			"SELECT received_at FROM deliveries WHERE message_id = 'wait-1'",
		);
		expect(signals.oldestUnprocessedMs).toBe(oldest?.received_at);
	});
});
