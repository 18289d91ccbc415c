import { beforeEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/env";
import { verifyStandard } from "../../src/providers/standard";
import { hmacHex } from "../support/bloobank";
import { boldSender, pazySender, senderRequest } from "../support/senders";
import { call, harness, resetDb, rows } from "../support/worker";
import { TEST_SECRETS } from "../vars";

beforeEach(resetDb);

describe("Standard Webhooks", () => {
	it("passes the specification's published test vector", async () => {
		const result = await verifyStandard({
			headers: new Headers({
				"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
				"webhook-timestamp": "1614265330",
				"webhook-signature":
					"v1,bm9ldHUjKzFob2VudXRob2VodWUzMjRvdWVvdW9ldQo= v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
			}),
			body: new TextEncoder().encode('{"test": 2432232314}'),
			secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
			nowMs: 1614265330_000,
			config: parseConfig({} as never),
		});
		expect(result).toEqual({ ok: true });
	});
});

describe("Pazy", () => {
	it("a payment re-sent under a new event id with the same paymentId changes nothing", async () => {
		const h = harness();
		const first = pazySender.event("evt-1", "pay-1", 1, "SUCCEEDED");
		expect((await call(h, await senderRequest(pazySender, first, { messageId: "evt-1" }))).status).toBe(200);
		const resent = first.replace('"evt-1"', '"evt-2"');
		expect((await call(h, await senderRequest(pazySender, resent, { messageId: "evt-2" }))).status).toBe(200);
		expect(h.events.sent).toHaveLength(1);
		expect(await rows("SELECT message_id, duplicates, dedupe_key FROM deliveries")).toEqual([
			{ message_id: "evt-1", duplicates: 1, dedupe_key: "payment.succeeded:pay-1" },
		]);
		// A different transition of the same payment is a new delivery.
		const refund = pazySender.event("evt-3", "pay-1", 2, "REFUNDED");
		expect((await call(h, await senderRequest(pazySender, refund, { messageId: "evt-3" }))).status).toBe(200);
		expect(h.events.sent).toHaveLength(2);
	});

	it("records X-Pazy-Webhook-Attempt", async () => {
		const h = harness();
		const req = await senderRequest(pazySender, pazySender.event("evt-a", "pay-a", 1, "SUCCEEDED"), {
			messageId: "evt-a",
		});
		req.headers.set("x-pazy-webhook-attempt", "3");
		await call(h, req);
		expect(await rows("SELECT provider_attempt FROM deliveries")).toEqual([{ provider_attempt: 3 }]);
	});
});

describe("Bold", () => {
	it("accepts a base64 signature and keeps attemptId for audit", async () => {
		const h = harness();
		const body = boldSender.event("11111111-2222-3333-4444-555555555555", "ch-1", 1, "PAID");
		const hex = await hmacHex(TEST_SECRETS.bold[0], body);
		const b64 = btoa(String.fromCharCode(...(hex.match(/../g) ?? []).map((x) => Number.parseInt(x, 16))));
		const req = new Request("https://receiver.test/webhooks/bold", {
			method: "POST",
			headers: { "x-hmac-signature": b64 },
			body,
		});
		expect((await call(h, req)).status).toBe(200);
		expect(await rows("SELECT attempt_ref FROM deliveries")).toEqual([
			{ attempt_ref: "att-11111111-2222-3333-4444-555555555555" },
		]);
	});

	it("stores an unsupported major version as ignored with a note, and answers 200", async () => {
		const h = harness();
		const res = await call(
			h,
			await senderRequest(boldSender, boldSender.unmodelled("evt-major"), { messageId: "evt-major" }),
		);
		expect(res.status).toBe(200);
		expect(await rows("SELECT status, note FROM deliveries")).toEqual([
			{ status: "ignored", note: "unsupported major version 2" },
		]);
	});

	it("refuses an invalid eventName with 500", async () => {
		const h = harness();
		const body = JSON.stringify({
			eventId: "e",
			eventName: "no spaces allowed",
			entity: "c",
			entityId: "1",
			occurredOn: "2026-01-01T00:00:00Z",
			majorVersion: 1,
			minorVersion: 0,
		});
		expect((await call(h, await senderRequest(boldSender, body, { messageId: "e" }))).status).toBe(500);
	});
});
