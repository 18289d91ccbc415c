import { beforeEach, describe, expect, it } from "vitest";
import { parseWebhookConfig } from "../../src/env";
import { standardKey, verifyStandard } from "../../src/providers/standard";
import { consume } from "../support/apply";
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
			keys: [standardKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") as Uint8Array],
			nowMs: 1614265330_000,
			config: parseWebhookConfig({} as never),
		});
		expect(result).toEqual({ ok: true });
	});
});

describe("Pazy", () => {
	it("paymentId is the resource, not the event: a new event id for the same payment and type is stored and goes through the version rule", async () => {
		const h = harness();
		const first = pazySender.event("evt-1", "pay-1", 1, "SUCCEEDED");
		expect((await call(h, await senderRequest(pazySender, first, { messageId: "evt-1" }))).status).toBe(200);
		// The same payment and type under a new event id, a later event time: not a duplicate.
		const later = pazySender.event("evt-2", "pay-1", 2, "SUCCEEDED");
		expect((await call(h, await senderRequest(pazySender, later, { messageId: "evt-2" }))).status).toBe(200);
		// And an older one under a third id: stored, then stale.
		const older = pazySender.event("evt-0", "pay-1", 0, "PENDING");
		expect((await call(h, await senderRequest(pazySender, older, { messageId: "evt-0" }))).status).toBe(200);
		expect(h.events.sent).toHaveLength(3);
		for (const m of h.events.sent) await consume(h, [m]);
		expect(await rows("SELECT message_id, duplicates, status FROM deliveries ORDER BY id")).toEqual([
			{ message_id: "evt-1", duplicates: 0, status: "processed" },
			{ message_id: "evt-2", duplicates: 0, status: "processed" },
			{ message_id: "evt-0", duplicates: 0, status: "stale" },
		]);
		expect(await rows("SELECT id, status FROM resources")).toEqual([{ id: "pay-1", status: "SUCCEEDED" }]);
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

	it("a signed event with an invalid eventName is stored and ignored with a note, answered 2xx", async () => {
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
		expect((await call(h, await senderRequest(boldSender, body, { messageId: "e" }))).status).toBe(200);
		expect(await rows("SELECT status, note FROM deliveries")).toEqual([
			{ status: "ignored", note: "eventName is not domain.action" },
		]);
	});

	it.each([
		["a numeric entityId", { entityId: 42 }, "entity, entityId (a string) and occurredOn are required"],
		["majorVersion as a string", { majorVersion: "1" }, "majorVersion and minorVersion must be non-negative integers"],
	])("a signed event with %s is stored and ignored with a note, not refused", async (_, change, note) => {
		const h = harness();
		const body = JSON.stringify({
			eventId: "e2",
			eventName: "charge.paid",
			entity: "charge",
			entityId: "c1",
			occurredOn: "2026-01-01T00:00:00Z",
			majorVersion: 1,
			minorVersion: 0,
			...change,
		});
		expect((await call(h, await senderRequest(boldSender, body, { messageId: "e2" }))).status).toBe(200);
		expect(await rows("SELECT status, note FROM deliveries")).toEqual([{ status: "ignored", note }]);
		expect(h.events.sent).toHaveLength(0);
	});
});
