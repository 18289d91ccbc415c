/**
 * The conformance suite: written once, run for every provider (test/providers/conformance.test.ts)
 * and for a provider registered by a test (test/providers/toy-provider.test.ts). A new provider
 * passes it by adding a Sender to test/support/senders.ts.
 */
import { expect, it } from "vitest";
import type { Env } from "../../src/bindings";
import type { QueueMessage } from "../../src/queue/messages";
import { consume } from "./apply";
import { type Sender, senderRequest } from "./senders";
import { call, countRows, harness, rows } from "./worker";

async function send(sender: Sender, body: string, opts: Parameters<typeof senderRequest>[2], vars: Partial<Env>) {
	const h = harness(vars);
	const res = await call(h, await senderRequest(sender, body, opts));
	return { h, res, text: await res.text() };
}

/** Registers the suite's tests for `sender` (call inside a describe); `vars` configure the Worker. */
export function conformanceSuite(sender: Sender, vars: Partial<Env> = {}): void {
	const body = sender.event("msg-1", "res-1", 1, "PENDING");

	it("accepts a valid signature: 200, one row, one queue message", async () => {
		const { h, res } = await send(sender, body, { messageId: "msg-1" }, vars);
		expect(res.status).toBe(200);
		expect(h.events.sent).toHaveLength(1);
		expect(await rows("SELECT provider, message_id, status FROM deliveries")).toEqual([
			{ provider: sender.name, message_id: "msg-1", status: "enqueued" },
		]);
	});

	it.each([0, 1])("accepts rotation secret #%i", async (i) => {
		const { res } = await send(sender, body, { messageId: "msg-1", secret: sender.secrets[i] }, vars);
		expect(res.status).toBe(200);
	});

	it("rejects a tampered body, a wrong secret and a missing header with an empty 401", async () => {
		const cases = [
			await send(sender, body.replace("res-1", "res-2"), { messageId: "msg-1", signedBody: body }, vars),
			await send(
				sender,
				body,
				{
					messageId: "msg-1",
					secret: sender.name === "standard" ? "whsec_d3Jvbmctc2VjcmV0" : "wrong-secret",
				},
				vars,
			),
		];
		const missing = harness(vars);
		const req = await senderRequest(sender, body, { messageId: "msg-1" });
		req.headers.delete(sender.signatureHeader);
		const missingRes = await call(missing, req);
		cases.push({ h: missing, res: missingRes, text: await missingRes.text() });
		for (const c of cases) {
			expect(c.res.status).toBe(401);
			expect(c.text).toBe("");
			expect(c.h.events.sent).toHaveLength(0);
		}
		expect(await countRows("deliveries")).toBe(0);
		expect(await rows("SELECT count(*) AS n FROM rejections WHERE provider = ? AND status = 401", sender.name)).toEqual(
			[{ n: 3 }],
		);
	});

	it.runIf(sender.timestamped)("rejects stale and future timestamps with an empty 401", async () => {
		for (const skew of [-301_000, 301_000]) {
			const { res, text } = await send(sender, body, { messageId: "msg-1", nowMs: Date.now() + skew }, vars);
			expect(res.status).toBe(401);
			expect(text).toBe("");
		}
		for (const skew of [-290_000, 290_000]) {
			const { res } = await send(
				sender,
				sender.event(`msg-ok-${skew}`, "res-1", 1, "PENDING"),
				{
					messageId: `msg-ok-${skew}`,
					nowMs: Date.now() + skew,
				},
				vars,
			);
			expect(res.status).toBe(200);
		}
	});

	it("duplicates produce one queue message", async () => {
		const h = harness(vars);
		for (let i = 0; i < 3; i++)
			expect((await call(h, await senderRequest(sender, body, { messageId: "msg-1" }))).status).toBe(200);
		expect(h.events.sent).toHaveLength(1);
		expect(await rows("SELECT duplicates FROM deliveries")).toEqual([{ duplicates: 2 }]);
	});

	it("out-of-order events end at the newest state", async () => {
		const h = harness(vars);
		const statuses = ["PENDING", "PROCESSING", "SUCCEEDED"];
		for (const version of [3, 1, 2]) {
			const messageId = `ooo-${version}`;
			const b = sender.event(messageId, "res-ooo", version, statuses[version - 1] as string);
			// Signed in delivery order, as a sender re-signing retries would: the header time says nothing of the order.
			expect((await call(h, await senderRequest(sender, b, { messageId }))).status).toBe(200);
			await consume(h, [h.events.sent.at(-1) as QueueMessage]);
		}
		expect(await rows("SELECT type, id, status FROM resources")).toEqual([
			{ type: sender.resourceType, id: "res-ooo", status: "SUCCEEDED" },
		]);
		expect(await rows("SELECT message_id, status FROM deliveries ORDER BY message_id")).toEqual([
			{ message_id: "ooo-1", status: "stale" },
			{ message_id: "ooo-2", status: "stale" },
			{ message_id: "ooo-3", status: "processed" },
		]);
	});

	it("an event it does not model: 200, stored as ignored, nothing enqueued", async () => {
		const { h, res } = await send(sender, sender.unmodelled("msg-u"), { messageId: "msg-u" }, vars);
		expect(res.status).toBe(200);
		expect(h.events.sent).toHaveLength(0);
		const [row] = await rows<{ status: string; note: string }>("SELECT status, note FROM deliveries");
		expect(row?.status).toBe("ignored");
		expect(row?.note).toBeTruthy();
	});

	it("a signed event we do not model (malformed resource) is stored, ignored with a note, and answered 2xx", async () => {
		const { h, res } = await send(sender, sender.malformed("msg-m"), { messageId: "msg-m" }, vars);
		expect(res.status).toBe(200);
		expect(h.events.sent).toHaveLength(0);
		const stored = await rows<{ status: string; note: string | null }>("SELECT status, note FROM deliveries");
		expect(stored).toHaveLength(1);
		expect(stored[0]?.status).toBe("ignored");
		expect(stored[0]?.note).toBeTruthy();
	});

	it("a signed body that is not JSON: 500 (retried), recorded, nothing stored", async () => {
		const { h, res } = await send(sender, "{not json", { messageId: "msg-nj" }, vars);
		expect(res.status).toBe(500);
		expect(h.events.sent).toHaveLength(0);
		expect(await countRows("deliveries")).toBe(0);
		expect(await rows("SELECT provider, status FROM rejections")).toEqual([{ provider: sender.name, status: 500 }]);
	});
}
