import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { getConfig } from "../../src/env";
import worker from "../../src/index";
import type { QueueMessage } from "../../src/queue/messages";
import { resendStuckDeliveries } from "../../src/sweep/sweep";
import { consume } from "../support/apply";
import { OLD_SECRET, orderEvent, SECRET, type SignOptions, signedRequest } from "../support/bloobank";
import { call, countRows, harness, resetDb, rows } from "../support/worker";

const order = (n: number, status = "PENDING") => orderEvent(`msg-${n}`, { id: `ord-${n}`, ordVersion: 1, status });
/**
 * Version n of one order: consecutive deliveries that share a database whatever the shards (marks
 * ride along only with a write to the same database, src/db/shards.ts).
 */
const sameOrder = (n: number) => orderEvent(`msg-${n}`, { id: "ord-shared", ordVersion: n, status: "PENDING" });

interface DeliveryRow {
	id: number;
	status: string;
	duplicates: number;
	raw_body: string;
	provider_attempt: number | null;
}

beforeEach(resetDb);

describe("intake of a new delivery", () => {
	it("stores the raw body, sends one pointer, answers 200 with an empty body", async () => {
		const h = harness();
		const raw = JSON.stringify(order(1));
		const res = await call(h, await signedRequest(raw));
		expect(res.status).toBe(200);
		expect(await res.text()).toBe("");
		const [row] = await rows<DeliveryRow>("SELECT * FROM deliveries");
		expect(row).toMatchObject({ status: "enqueued", duplicates: 0, raw_body: raw, provider_attempt: 1 });
		expect(h.events.sent).toEqual([
			{ kind: "delivery", deliveryId: row?.id, provider: "bloobank", messageId: "msg-1" },
		]);
	});

	it("makes exactly one D1 round trip before answering (marking enqueued runs after the answer)", async () => {
		const h = harness();
		h.db.holdAfter = 1;
		const ctx = createExecutionContext();
		const res = await worker.fetch(await signedRequest(order(2)), h.env, ctx);
		// The answer is out after one round trip; the "enqueued" mark comes later, in waitUntil.
		expect(res.status).toBe(200);
		expect(h.db.roundTrips).toBe(1);
		expect(h.db.statements[0]).toContain("INSERT INTO deliveries");
		expect((await rows<DeliveryRow>("SELECT status FROM deliveries"))[0]?.status).toBe("received");
		const settled = waitOnExecutionContext(ctx);
		await vi.waitFor(() => expect(h.db.roundTrips).toBe(2));
		expect(h.db.statements[1]).toContain("UPDATE deliveries SET");
		h.db.release();
		await settled;
		expect(await rows("SELECT status, ack_ms IS NOT NULL AS has_ack FROM deliveries")).toEqual([
			{ status: "enqueued", has_ack: 1 },
		]);
	});

	it("a waiting enqueued mark rides along with the next inbox write: one round trip for both", async () => {
		const h = harness();
		const first = createExecutionContext();
		expect((await worker.fetch(await signedRequest(sameOrder(4)), h.env, first)).status).toBe(200);
		// The first request's mark waits for its flush; the second request's write takes it along.
		expect((await call(h, await signedRequest(sameOrder(5)))).status).toBe(200);
		expect(h.db.statements.slice(0, 2)).toEqual([expect.stringContaining("INSERT INTO deliveries"), "batch(2)"]);
		await waitOnExecutionContext(first);
		// The second mark went into the buffer the first request opened, which flushed it.
		expect(h.db.statements.slice(2)).toEqual([expect.stringContaining("UPDATE deliveries SET")]);
		expect(await rows("SELECT message_id, status, ack_ms IS NOT NULL AS has_ack FROM deliveries ORDER BY id")).toEqual([
			{ message_id: "msg-4", status: "enqueued", has_ack: 1 },
			{ message_id: "msg-5", status: "enqueued", has_ack: 1 },
		]);
	});

	it("a failed inbox write loses the marks it carried but nothing else: the consumer still applies the row", async () => {
		const h = harness();
		const first = createExecutionContext();
		expect((await worker.fetch(await signedRequest(sameOrder(6)), h.env, first)).status).toBe(200);
		h.db.failRoundTrip = 2;
		expect((await call(h, await signedRequest(sameOrder(7)))).status).toBe(503);
		await waitOnExecutionContext(first);
		expect(await rows("SELECT message_id, status FROM deliveries")).toEqual([
			{ message_id: "msg-6", status: "received" },
		]);
		// The pointer was sent before the answer, so the row is applied as usual.
		const [pointer] = h.events.sent;
		expect(pointer).toMatchObject({ kind: "delivery", messageId: "msg-6" });
		await consume(h, [pointer as QueueMessage]);
		expect(await rows("SELECT status FROM deliveries")).toEqual([{ status: "processed" }]);
	});

	it("accepts a delivery signed with the previous secret during rotation", async () => {
		const h = harness();
		expect((await call(h, await signedRequest(order(3), { secret: OLD_SECRET }))).status).toBe(200);
	});

	it("stores an event it does not model as ignored, answers 200, and enqueues nothing", async () => {
		const h = harness();
		const body = { event: "balance.updated", messageId: "bal-1", data: { wallet: "w1", balance: 10 } };
		expect((await call(h, await signedRequest(body))).status).toBe(200);
		expect(await rows("SELECT status, event FROM deliveries")).toEqual([
			{ status: "ignored", event: "balance.updated" },
		]);
		expect(h.events.sent).toHaveLength(0);
	});
});

describe("duplicates", () => {
	it("answers 200 to a duplicate with one round trip, counts it, and sends nothing", async () => {
		const h = harness();
		const raw = JSON.stringify(order(10));
		await call(h, await signedRequest(raw));
		const dup = harness();
		const res = await call(dup, await signedRequest(raw, { headers: { "x-bloobank-delivery-attempt": "2" } }));
		expect(res.status).toBe(200);
		expect(dup.db.roundTrips).toBe(1);
		expect(dup.events.sent).toHaveLength(0);
		expect(await rows("SELECT duplicates, status FROM deliveries")).toEqual([{ duplicates: 1, status: "enqueued" }]);
	});

	it("20 identical deliveries at once: one row, one queue message", async () => {
		const h = harness();
		const raw = JSON.stringify(order(11));
		const requests = await Promise.all(Array.from({ length: 20 }, () => signedRequest(raw)));
		const answers = await Promise.all(requests.map((r) => call(h, r)));
		expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
		expect(h.events.sent).toHaveLength(1);
		expect(await rows("SELECT count(*) AS n, max(duplicates) AS d FROM deliveries")).toEqual([{ n: 1, d: 19 }]);
	});

	it("a duplicate of a row whose send failed re-sends it", async () => {
		const h = harness();
		h.events.fail = true;
		const raw = JSON.stringify(order(12));
		const first = await call(h, await signedRequest(raw));
		expect(first.status).toBe(503);
		expect(first.headers.get("retry-after")).toBe("10");
		expect(await rows("SELECT status FROM deliveries")).toEqual([{ status: "received" }]);

		h.events.fail = false;
		// BlooBank's retry carries the same messageId with the next deliveryAttempt.
		const retry = await call(h, await signedRequest({ ...order(12), deliveryAttempt: 2 }));
		expect(retry.status).toBe(200);
		expect(h.events.sent).toHaveLength(1);
		expect(await rows("SELECT status, duplicates, provider_attempt FROM deliveries")).toEqual([
			{ status: "enqueued", duplicates: 1, provider_attempt: 2 },
		]);
	});

	it("the sweep re-sends a row left received once it is older than SWEEP_STALE_SECONDS", async () => {
		const h = harness();
		h.events.fail = true;
		await call(h, await signedRequest(order(13)));
		h.events.fail = false;
		const config = getConfig(h.env);
		expect(await resendStuckDeliveries(h.env, config, Date.now())).toBe(0);
		expect(await resendStuckDeliveries(h.env, config, Date.now() + 301_000)).toBe(1);
		expect(h.events.sent).toHaveLength(1);
		expect(await rows("SELECT status FROM deliveries")).toEqual([{ status: "enqueued" }]);
		// Re-sent rows are fresh again: the next tick leaves them alone.
		expect(await resendStuckDeliveries(h.env, config, Date.now() + 302_000)).toBe(0);
	});

	it("the sweep also re-sends rows enqueued but never applied", async () => {
		const h = harness();
		await call(h, await signedRequest(order(14)));
		expect(await resendStuckDeliveries(h.env, getConfig(h.env), Date.now() + 301_000)).toBe(1);
		expect(h.events.sent).toHaveLength(2);
	});
});

describe("failures answer 503 with Retry-After and lose nothing", () => {
	it("D1 failing -> 503, nothing sent", async () => {
		const h = harness();
		h.db.failRoundTrip = true;
		const res = await call(h, await signedRequest(order(20)));
		expect(res.status).toBe(503);
		expect(res.headers.get("retry-after")).toBe("10");
		expect(h.events.sent).toHaveLength(0);
	});
});

describe("status codes", () => {
	const rejections = () => rows<Record<string, unknown>>("SELECT provider, reason, status, size FROM rejections");

	it("401 with an empty body for a bad signature, recorded as metadata only", async () => {
		const h = harness();
		const res = await call(h, await signedRequest(order(30), { secret: "wrong-secret" }));
		expect(res.status).toBe(401);
		expect(await res.text()).toBe("");
		expect(await countRows("deliveries")).toBe(0);
		const [rej] = await rejections();
		expect(rej).toMatchObject({ provider: "bloobank", reason: "signature_mismatch", status: 401 });
		const columns = Object.keys((await rows("SELECT * FROM rejections"))[0] ?? {});
		expect(columns.sort()).toEqual(["at", "id", "ip", "provider", "reason", "seq", "size", "status"]);
	});

	it.each<[string, { offsetMs?: number } & SignOptions, string]>([
		// Offsets, not times: a timestamp taken when the file is collected drifts on a slow machine.
		["missing signature", { signatureHeader: null }, "missing_signature"],
		["stale timestamp", { offsetMs: -301_000 }, "timestamp_out_of_tolerance"],
		["future timestamp", { offsetMs: 301_000 }, "timestamp_out_of_tolerance"],
		["header mismatch", { timestampHeader: "123" }, "timestamp_mismatch"],
	])("401 for %s", async (_name, { offsetMs, ...opts }, reason) => {
		const h = harness();
		const timing = offsetMs === undefined ? {} : { timestampMs: Date.now() + offsetMs };
		const res = await call(h, await signedRequest(order(31), { ...opts, ...timing }));
		expect(res.status).toBe(401);
		expect(await res.text()).toBe("");
		expect((await rejections())[0]?.reason).toBe(reason);
	});

	it("413 for a declared Content-Length over MAX_BODY_BYTES", async () => {
		const h = harness();
		const big = JSON.stringify({ ...order(32), pad: "x".repeat(70_000) });
		const res = await call(h, await signedRequest(big));
		expect(res.status).toBe(413);
		expect((await rejections())[0]).toMatchObject({ reason: "too_large", status: 413 });
	});

	it("413 for a streamed body that runs past the cap without a Content-Length", async () => {
		const h = harness();
		const chunk = new TextEncoder().encode("x".repeat(16_384));
		let sent = 0;
		const stream = new ReadableStream<Uint8Array>({
			pull(controller) {
				if (sent++ < 100) controller.enqueue(chunk);
				else controller.close();
			},
		});
		// Plausible signature headers: without them the request is refused before its body is read.
		const ts = String(Date.now());
		const req = new Request("https://receiver.test/webhooks/bloobank", {
			method: "POST",
			body: stream,
			headers: { "x-bloobank-timestamp": ts, "x-bloobank-signature": `t=${ts},v1=${"0".repeat(64)}` },
		});
		expect(req.headers.get("content-length")).toBeNull();
		const res = await call(h, req);
		expect(res.status).toBe(413);
		// Stopped right after passing the 64 KiB cap, not after reading all 1.6 MB.
		expect(sent).toBeLessThan(10);
	});

	it("500 for a signed body that is not JSON, recorded", async () => {
		const h = harness();
		const res = await call(h, await signedRequest("this is not json"));
		expect(res.status).toBe(500);
		expect((await rejections())[0]).toMatchObject({ reason: "invalid_json", status: 500 });
		expect(await countRows("deliveries")).toBe(0);
	});

	it("500 for a signed body without messageId", async () => {
		const h = harness();
		const res = await call(h, await signedRequest({ event: "payment_order.success", data: { id: "o" } }));
		expect(res.status).toBe(500);
		expect((await rejections())[0]?.reason).toBe("missing_message_id");
	});

	it("500 for a signed body that is not UTF-8", async () => {
		const h = harness();
		const bytes = new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]);
		const ts = String(Date.now());
		const key = await crypto.subtle.importKey(
			"raw",
			new TextEncoder().encode(SECRET),
			{ name: "HMAC", hash: "SHA-256" },
			false,
			["sign"],
		);
		const signed = new Uint8Array([...new TextEncoder().encode(`${ts}.`), ...bytes]);
		const mac = [...new Uint8Array(await crypto.subtle.sign("HMAC", key, signed))]
			.map((b) => b.toString(16).padStart(2, "0"))
			.join("");
		const req = new Request("https://receiver.test/webhooks/bloobank", {
			method: "POST",
			headers: { "x-bloobank-signature": `t=${ts},v1=${mac}` },
			body: bytes,
		});
		const res = await call(h, req);
		expect(res.status).toBe(500);
		expect((await rejections())[0]?.reason).toBe("invalid_utf8");
	});

	it("404 for an unknown provider; 503 (retried) for a known provider whose secrets are unset", async () => {
		const h = harness();
		expect((await call(h, await signedRequest(order(33), { path: "/webhooks/nope" }))).status).toBe(404);
		const boldOff = harness({ BOLD_WEBHOOK_SECRETS: "" });
		expect((await call(boldOff, await signedRequest(order(33), { path: "/webhooks/bold" }))).status).toBe(503);
		expect((await call(h, await signedRequest(order(33), { path: "/webhooks/__proto__" }))).status).toBe(404);
		const off = harness({ BLOOBANK_WEBHOOK_SECRETS: "" });
		expect((await call(off, await signedRequest(order(33)))).status).toBe(503);
		expect((await call(h, await signedRequest(order(33), { path: `/webhooks/${"x".repeat(40)}` }))).status).toBe(404);
		expect(await rows("SELECT provider, reason, status FROM rejections ORDER BY seq")).toEqual([
			{ provider: "(unknown)", reason: "unknown_provider", status: 404 },
			{ provider: "bold", reason: "provider_not_configured", status: 503 },
			{ provider: "(unknown)", reason: "unknown_provider", status: 404 },
			{ provider: "bloobank", reason: "provider_not_configured", status: 503 },
			{ provider: "(unknown)", reason: "unknown_provider", status: 404 },
		]);
	});

	it("405 for a wrong method", async () => {
		const h = harness();
		const res = await call(h, new Request("https://receiver.test/webhooks/bloobank"));
		expect(res.status).toBe(405);
		expect(res.headers.get("allow")).toBe("POST");
	});

	it("GET /healthz", async () => {
		const res = await call(harness(), new Request("https://receiver.test/healthz"));
		expect(res.status).toBe(200);
		expect(await res.json()).toEqual({ ok: true });
	});
});

describe("WEBHOOK_PATH_TOKEN", () => {
	const token = "p4th-t0ken-0123456789abcdef0123456789";
	it("serves only the tokened path", async () => {
		const h = harness({ WEBHOOK_PATH_TOKEN: token });
		expect((await call(h, await signedRequest(order(40)))).status).toBe(404);
		expect((await call(h, await signedRequest(order(40), { path: "/webhooks/bloobank/wrong" }))).status).toBe(404);
		expect((await call(h, await signedRequest(order(40), { path: `/webhooks/bloobank/${token}x` }))).status).toBe(404);
		expect((await call(h, await signedRequest(order(40), { path: `/webhooks/bloobank/${token}` }))).status).toBe(200);
		const recorded = await rows<{ reason: string }>("SELECT reason FROM rejections");
		expect(recorded.map((r) => r.reason)).toEqual(["bad_path", "bad_path", "bad_path"]);
	});

	it("without a token configured, a tokened path does not exist", async () => {
		const h = harness();
		expect((await call(h, await signedRequest(order(41), { path: "/webhooks/bloobank/anything" }))).status).toBe(404);
	});
});

describe("logs", () => {
	it("never contain a secret, a token, a signature or a raw body over a full request cycle", async () => {
		const lines: string[] = [];
		const capture = (...args: unknown[]) => lines.push(args.map(String).join(" "));
		const spies = [
			vi.spyOn(console, "log").mockImplementation(capture),
			vi.spyOn(console, "warn").mockImplementation(capture),
			vi.spyOn(console, "error").mockImplementation(capture),
		];
		const pathToken = "path-token-never-logged-42-0123456789abcdef";
		const adminToken = "admin-token-never-logged-42-0123456789abcdef";
		try {
			const h = harness({ WEBHOOK_PATH_TOKEN: pathToken, ADMIN_TOKEN: adminToken });
			const path = `/webhooks/bloobank/${pathToken}`;
			const good = await signedRequest(order(50), { path });
			const sig = good.headers.get("x-bloobank-signature") ?? "";
			await call(h, good);
			await call(h, await signedRequest(order(50), { path }));
			await call(h, await signedRequest(order(51), { path, secret: "wrong" }));
			await call(h, await signedRequest("not json", { path }));
			await call(h, await signedRequest(order(53), { path: "/webhooks/bloobank/wrong-token" }));
			await call(h, new Request("https://receiver.test/admin/metrics", { headers: { authorization: "Bearer nope" } }));
			await call(
				h,
				new Request("https://receiver.test/admin/metrics", { headers: { authorization: `Bearer ${adminToken}` } }),
			);
			h.events.fail = true;
			await call(h, await signedRequest(order(52), { path }));
			h.db.failRoundTrip = true;
			await call(h, await signedRequest(order(54), { path }));
			const text = lines.join("\n");
			expect(lines.length).toBeGreaterThan(6);
			for (const secret of [SECRET, OLD_SECRET, pathToken, adminToken]) expect(text).not.toContain(secret);
			expect(text).not.toContain(sig.split("v1=")[1]);
			expect(text).not.toContain("v1=");
			expect(text).not.toContain('"amount"');
		} finally {
			for (const s of spies) s.mockRestore();
		}
	});
});
