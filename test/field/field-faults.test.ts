/**
 * Faults a merchant meets in production, one test each, named for the fault. Each runs through
 * the Worker's real entry points (fetch, queue, scheduled code) with real local D1 and Queues.
 */
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { MAX_CHUNK_BODY_BYTES } from "../../src/apply/consumer";
import { hmacCounter } from "../../src/crypto/hmac";
import { getConfig, getShards, parseWebhookConfig } from "../../src/env";
import worker from "../../src/index";
import { recordDelivery, SEND_LEASE_MS } from "../../src/ingress/inbox";
import { parseBlooBank } from "../../src/providers/bloobank";
import type { DeliveryMessage, QueueMessage } from "../../src/queue/messages";
import { runAlerts } from "../../src/sweep/alerts";
import { resendStuckDeliveries } from "../../src/sweep/sweep";
import { consume, ingest } from "../support/apply";
import { hmacHex, orderEvent, pointerShard, SECRET, signedRequest } from "../support/bloobank";
import { boldSender, pazySender, type Sender, senderRequest, standardSender } from "../support/senders";
import { call, countRows, harness, resetDb, rows, rowsPerShard } from "../support/worker";
import { TEST_VARS } from "../vars";

beforeEach(resetDb);

const ADMIN = "field-test-admin-token-0123456789abcdef0123";
const adminGet = (h: ReturnType<typeof harness>, path: string) =>
	call(h, new Request(`https://receiver.test${path}`, { headers: { authorization: `Bearer ${ADMIN}` } }));

describe("BlooBank order ids are unique only within a wallet", () => {
	it("w1/ord_1 FAILED v5 and w2/ord_1 SUCCESS v2 stay two orders; w2's settled effect fires", async () => {
		const h = harness({ ADMIN_TOKEN: ADMIN });
		const a = await ingest(h, "m-w1", { id: "ord_1", wallet: "w1", ordVersion: 5, status: "FAILED", amount: 100 });
		const b = await ingest(h, "m-w2", { id: "ord_1", wallet: "w2", ordVersion: 2, status: "SUCCESS", amount: 700 });
		await consume(h, [a, b]);
		expect(await rows("SELECT wallet, id, version, status FROM resources ORDER BY wallet")).toEqual([
			{ wallet: "w1", id: "ord_1", version: 5, status: "FAILED" },
			{ wallet: "w2", id: "ord_1", version: 2, status: "SUCCESS" },
		]);
		expect(await rows("SELECT message_id, status FROM deliveries ORDER BY id")).toEqual([
			{ message_id: "m-w1", status: "processed" },
			{ message_id: "m-w2", status: "processed" },
		]);
		expect(await rows("SELECT resource_wallet, kind, status FROM effects ORDER BY resource_wallet")).toEqual([
			{ resource_wallet: "w1", kind: "payment_failed", status: "done" },
			{ resource_wallet: "w2", kind: "settled", status: "done" },
		]);
		expect(
			await rows(
				"SELECT currency, sum(count) AS count, sum(amount) AS amount FROM settled_totals GROUP BY currency ORDER BY currency",
			),
		).toEqual([{ currency: "BRL", count: 1, amount: 700 }]);

		// The admin API: ?wallet selects one; without it, an id held by several wallets is ambiguous.
		const one = await adminGet(h, "/admin/resources/bloobank/payment_order/ord_1?wallet=w2");
		expect(one.status).toBe(200);
		expect(await one.json()).toMatchObject({ id: "ord_1", wallet: "w2", status: "SUCCESS", version: 2 });
		const ambiguous = await adminGet(h, "/admin/resources/bloobank/payment_order/ord_1");
		expect(ambiguous.status).toBe(409);
		expect(await ambiguous.json()).toEqual({ error: "ambiguous", wallets: ["w1", "w2"] });
		expect((await adminGet(h, "/admin/resources/bloobank/payment_order/ord_1?wallet=w3")).status).toBe(404);
	});
});

describe("same version, different content", () => {
	it("a final status beats a non-final one at an equal version, REFUNDED beats SUCCESS, and an equal rank is stale same_version", async () => {
		const h = harness();
		const order = (m: string, status: string, amount: number) =>
			ingest(h, m, { id: "ord_tie", ordVersion: 7, status, amount });
		await consume(h, [await order("t-1", "PROCESSING", 1)]);
		await consume(h, [await order("t-2", "SUCCESS", 1)]);
		await consume(h, [await order("t-3", "PENDING", 1)]);
		await consume(h, [await order("t-4", "FAILED", 1)]);
		await consume(h, [await order("t-5", "REFUNDED", 1)]);
		// Each is marked for what the state held when it was applied.
		expect(await rows("SELECT message_id, status, note FROM deliveries ORDER BY id")).toEqual([
			{ message_id: "t-1", status: "processed", note: null },
			{ message_id: "t-2", status: "processed", note: null },
			{ message_id: "t-3", status: "stale", note: "same_version" },
			{ message_id: "t-4", status: "stale", note: "same_version" },
			{ message_id: "t-5", status: "processed", note: null },
		]);
		expect(await rows("SELECT status FROM resources")).toEqual([{ status: "REFUNDED" }]);
		// SUCCESS settled once; REFUNDED, which only follows it, adds nothing.
		expect(await rows("SELECT kind FROM effects")).toEqual([{ kind: "settled" }]);
	});

	it("two Standard Webhooks events in the same second: the second is processed only if state holds it", async () => {
		const h = harness();
		const send = async (m: string, status: string) => {
			const body = JSON.stringify({
				type: `invoice.${status.toLowerCase()}`,
				timestamp: "2026-11-30T10:00:00Z",
				data: { id: "inv_1", status },
			});
			expect((await call(h, await senderRequest(standardSender, body, { messageId: m }))).status).toBe(200);
		};
		await send("s-1", "PAID");
		await send("s-2", "OPEN");
		for (const m of h.events.sent) await consume(h, [m]);
		expect(await rows("SELECT message_id, status, note FROM deliveries ORDER BY id")).toEqual([
			{ message_id: "s-1", status: "processed", note: null },
			{ message_id: "s-2", status: "stale", note: "same_version" },
		]);
		expect(await rows("SELECT status FROM resources")).toEqual([{ status: "PAID" }]);
	});

	it("the same content at the same version (a reconcile snapshot, then the webhook) is processed", async () => {
		const h = harness();
		const msg = await ingest(h, "same-1", { id: "ord_same", ordVersion: 3, status: "SUCCESS" });
		const stored = await rows<{ raw_body: string }>("SELECT raw_body FROM deliveries");
		const parsed = parseBlooBank(stored[0]?.raw_body ?? "", new Headers());
		if (!parsed.ok || !parsed.event.resource) throw new Error("fixture");
		// The list API orders keys differently: content, not text, decides.
		const data = Object.fromEntries(Object.entries(parsed.event.resource.data as object).reverse());
		const snapshot: QueueMessage = {
			kind: "snapshot",
			provider: "bloobank",
			runId: null,
			resource: { ...parsed.event.resource, data },
		};
		await consume(h, [snapshot]);
		await consume(h, [msg]);
		expect(await rows("SELECT status, note FROM deliveries")).toEqual([{ status: "processed", note: null }]);
	});
});

describe("the providers' own recovery path: fix, then replay from their dashboard", () => {
	it("a re-send of a failed delivery (same message id) is processed again", async () => {
		const h = harness();
		const msg = await ingest(h, "replay-f", { id: "ord_rf", ordVersion: 1, status: "SUCCESS", amount: 300 });
		// Its queue retries were exhausted while D1 was down: the dead-letter consumer failed it.
		await consume(h, [msg], "webhook-events-dlq");
		expect(await rows("SELECT status FROM deliveries")).toEqual([{ status: "failed" }]);
		const sentBefore = h.events.sent.length;
		const resend = await call(
			h,
			await signedRequest(orderEvent("replay-f", { id: "ord_rf", ordVersion: 1, status: "SUCCESS", amount: 300 })),
		);
		expect(resend.status).toBe(200);
		expect(h.events.sent).toHaveLength(sentBefore + 1);
		expect(await rows("SELECT status FROM deliveries")).toEqual([{ status: "enqueued" }]);
		const pointer = h.events.sent.at(-1) as DeliveryMessage;
		expect(pointer).toEqual(msg);
		await consume(h, [pointer]);
		expect(await rows("SELECT status, duplicates FROM deliveries")).toEqual([{ status: "processed", duplicates: 1 }]);
		expect(await rows("SELECT sum(count) AS count, sum(amount) AS amount FROM settled_totals")).toEqual([
			{ count: 1, amount: 300 },
		]);
		// A further re-send of the processed row stays a duplicate: nothing is sent.
		const sent = h.events.sent.length;
		await call(
			h,
			await signedRequest(orderEvent("replay-f", { id: "ord_rf", ordVersion: 1, status: "SUCCESS", amount: 300 })),
		);
		expect(h.events.sent).toHaveLength(sent);
	});

	it("a re-send of an ignored delivery is parsed again: enabling a Bold major version, then replaying, applies it", async () => {
		const body = JSON.stringify({
			eventId: "bold-2",
			eventName: "charge.paid",
			entity: "charge",
			entityId: "ch_1",
			occurredOn: "2026-11-30T10:00:00Z",
			majorVersion: 2,
			minorVersion: 0,
			payload: { status: "paid" },
		});
		const before = harness();
		expect((await call(before, await senderRequest(boldSender, body, { messageId: "bold-2" }))).status).toBe(200);
		expect(await rows("SELECT status, note FROM deliveries")).toEqual([
			{ status: "ignored", note: "unsupported major version 2" },
		]);
		const after = harness({ BOLD_SUPPORTED_MAJOR_VERSIONS: "1,2" });
		expect((await call(after, await senderRequest(boldSender, body, { messageId: "bold-2" }))).status).toBe(200);
		expect(after.events.sent).toHaveLength(1);
		await consume(after, after.events.sent);
		expect(await rows("SELECT status, note FROM deliveries WHERE resource_id IS NOT NULL")).toEqual([
			{ status: "processed", note: null },
		]);
		// One database re-opens the ignored row itself. With shards, a delivery that named no resource
		// was placed by its message id, so a re-send that now names one may land in its resource's
		// shard as a new row, the old one staying `ignored` (src/db/shards.ts; README, Shards).
		if (getShards(env).all.length === 1) expect(await countRows("deliveries")).toBe(1);
		expect(await rows("SELECT provider, id, status FROM resources")).toEqual([
			{ provider: "bold", id: "ch_1", status: "PAID" },
		]);
	});
});

describe("a mistyped secret is our fault, not the sender's", () => {
	// Bytes whose base64 uses both "+" and "/", so the URL-safe form differs.
	const secretBytes = Uint8Array.from({ length: 32 }, (_, i) => (i % 3 === 0 ? 0xfb : i % 3 === 1 ? 0xef : 0xbf));
	const b64 = btoa(String.fromCharCode(...secretBytes));
	it.each([
		["padded", b64],
		["unpadded", b64.replace(/=+$/, "")],
		["URL-safe", b64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")],
	])("a %s base64 secret is accepted (BLOOBANK_SECRET_ENCODING=base64)", async (_, secret) => {
		expect(b64).toMatch(/[+/]/); // the fixture exercises both alphabets
		const h = harness({ BLOOBANK_WEBHOOK_SECRETS: secret, BLOOBANK_SECRET_ENCODING: "base64" });
		const body = JSON.stringify(orderEvent("b64-1", { id: "o", ordVersion: 1, status: "PENDING" }));
		const ts = String(Date.now());
		const sig = await hmacHex(secretBytes, `${ts}.${body}`);
		const res = await call(
			h,
			new Request("https://receiver.test/webhooks/bloobank", {
				method: "POST",
				body,
				headers: { "x-bloobank-timestamp": ts, "x-bloobank-signature": `t=${ts},v1=${sig}` },
			}),
		);
		expect(res.status).toBe(200);
	});

	it.each([
		["BLOOBANK_WEBHOOK_SECRETS", { BLOOBANK_WEBHOOK_SECRETS: "not base64!!", BLOOBANK_SECRET_ENCODING: "base64" }],
		["STANDARD_WEBHOOK_SECRETS", { STANDARD_WEBHOOK_SECRETS: "whsec_%%%" }],
		["BLOOBANK_SECRET_ENCODING", { BLOOBANK_SECRET_ENCODING: "hex" }],
	])(
		"a %s that does not decode: every webhook 503 (retried, never 401) and /healthz 503 naming it",
		async (variable, vars) => {
			const h = harness(vars);
			const res = await call(
				h,
				await signedRequest(orderEvent("cfg-1", { id: "o", ordVersion: 1, status: "PENDING" })),
			);
			expect(res.status).toBe(503);
			expect(res.headers.get("retry-after")).toBe("10");
			const health = await call(h, new Request("https://receiver.test/healthz"));
			expect(health.status).toBe(503);
			expect(await health.json()).toEqual({ ok: false, error: variable });
			expect(await countRows("deliveries")).toBe(0);
		},
	);
});

describe("a configuration error must not dead-letter the queue", () => {
	it("with ALERT_WEBHOOK_URL broken, pointers are acked and their rows kept enqueued; the sweep re-sends them once fixed", async () => {
		const ok = harness();
		const msg = await ingest(ok, "cfg-q", { id: "ord_q", ordVersion: 1, status: "PENDING" });
		const broken = harness({ ALERT_WEBHOOK_URL: "http://alerts.example/hook" });
		const result = await consume(broken, [msg]);
		expect(result.explicitAcks).toHaveLength(1);
		expect(result.retryMessages).toHaveLength(0);
		expect(await rows("SELECT status, last_error FROM deliveries")).toEqual([
			{ status: "enqueued", last_error: "configuration error: ALERT_WEBHOOK_URL" },
		]);
		// The webhook secrets are not part of what the consumer reads: a typo there changes nothing.
		const secretTypo = harness({ STANDARD_WEBHOOK_SECRETS: "whsec_%%%" });
		await consume(secretTypo, [msg]);
		expect(await rows("SELECT status FROM deliveries")).toEqual([{ status: "processed" }]);
	});
});

describe("the hand-off windows", () => {
	it("after a crash between the D1 commit and the queue send, the provider's retry 10 s later re-sends at once", async () => {
		const h = harness();
		const t0 = Date.now();
		const parsed = parseBlooBank(
			JSON.stringify(orderEvent("crash-1", { id: "o_c", ordVersion: 1, status: "PENDING" })),
			new Headers(),
		);
		if (!parsed.ok) throw new Error("fixture");
		// The first request committed and died before its send: the row holds its send token.
		const first = await recordDelivery(env.DB, parsed.event, "{}", 2, null, t0);
		expect(first).toMatchObject({ kind: "new", mustSend: true });
		// A copy racing inside the lease does not send twice...
		expect(await recordDelivery(env.DB, parsed.event, "{}", 2, null, t0 + SEND_LEASE_MS - 1)).toMatchObject({
			mustSend: false,
		});
		// ...but BlooBank's second attempt (~10 s later) does: no waiting for the 5-minute sweep.
		expect(SEND_LEASE_MS).toBeLessThan(5_000);
		expect(await recordDelivery(env.DB, parsed.event, "{}", 2, null, t0 + 10_000)).toMatchObject({
			kind: "duplicate",
			mustSend: true,
		});
		expect(h.events.sent).toHaveLength(0);
	});

	it("the sweep serves received rows first: a backlog of enqueued rows does not crowd them out", async () => {
		const h = harness();
		const now = Date.now();
		const old = now - 3_600_000;
		await env.DB.batch([
			...Array.from({ length: 120 }, (_, i) =>
				env.DB.prepare(
					`INSERT INTO deliveries (provider, message_id, event, status, raw_body, body_bytes, received_at, status_at)
           VALUES ('bloobank', ?1, 'e', 'enqueued', '{}', 2, ?2, ?2)`,
				).bind(`backlog-${i}`, old - 1000 + i),
			),
			env.DB.prepare(
				`INSERT INTO deliveries (provider, message_id, event, status, raw_body, body_bytes, received_at, status_at)
         VALUES ('bloobank', 'lost-send', 'e', 'received', '{}', 2, ?1, ?1)`,
			).bind(old),
		]);
		const config = { ...parseWebhookConfig(TEST_VARS as never) };
		expect(await resendStuckDeliveries(h.env, config, now, 100)).toBe(100);
		const sent = h.events.sent.map((m) => (m as DeliveryMessage).messageId);
		expect(sent).toContain("lost-send");
	});
});

describe("bounded consumer memory", () => {
	it(`a batch of 100 deliveries near the body cap is loaded in chunks of at most ${MAX_CHUNK_BODY_BYTES / 1024 / 1024} MiB of bodies`, async () => {
		const h = harness();
		const msgs: QueueMessage[] = [];
		for (let i = 0; i < 100; i++)
			msgs.push(await ingest(h, `big-${i}`, { id: `ord_big_${i}`, ordVersion: 1, status: "PENDING" }));
		// The chunks follow the recorded body size (the column, not the test's small bodies).
		await rowsPerShard("UPDATE deliveries SET body_bytes = 1000000");
		h.db.statements.length = 0;
		await consume(h, msgs);
		const loads = h.db.statements.filter((s) => s.includes("sum(body_bytes) OVER"));
		// Each shard loads its own deliveries in chunks (src/db/shards.ts); one shard: 100 in chunks of 4.
		const perShard = new Map<number, number>();
		for (const m of msgs) {
			const shard = m.kind === "delivery" ? pointerShard(m.deliveryId) : 0;
			perShard.set(shard, (perShard.get(shard) ?? 0) + 1);
		}
		const perChunk = Math.floor(MAX_CHUNK_BODY_BYTES / 1_000_000);
		expect(loads).toHaveLength([...perShard.values()].reduce((n, count) => n + Math.ceil(count / perChunk), 0));
		expect(await rows("SELECT status, count(*) AS n FROM deliveries GROUP BY status")).toEqual([
			{ status: "processed", n: 100 },
		]);
	});
});

describe("hostile signature headers", () => {
	it("400 v1= items cost one HMAC per configured secret, and a trailing comma does not reject a genuine delivery", async () => {
		const h = harness();
		const body = JSON.stringify(orderEvent("hmac-1", { id: "o_h", ordVersion: 1, status: "PENDING" }));
		const ts = String(Date.now());
		const junk = Array.from({ length: 400 }, (_, i) => `v1=${i.toString(16).padStart(64, "0")}`).join(",");
		const before = hmacCounter.count;
		const flood = await call(
			h,
			new Request("https://receiver.test/webhooks/bloobank", {
				method: "POST",
				body,
				headers: { "x-bloobank-timestamp": ts, "x-bloobank-signature": `t=${ts},${junk}` },
			}),
		);
		expect(flood.status).toBe(401);
		// Two secrets configured (rotation): two MACs, whatever the number of candidates.
		expect(hmacCounter.count - before).toBe(2);
		const sig = await hmacHex(SECRET, `${ts}.${body}`);
		const genuine = await call(
			h,
			new Request("https://receiver.test/webhooks/bloobank", {
				method: "POST",
				body,
				headers: { "x-bloobank-timestamp": ts, "x-bloobank-signature": `t=${ts},v1=${sig},` },
			}),
		);
		expect(genuine.status).toBe(200);
	});

	it("a request without a timestamp in tolerance costs no HMAC and no body read", async () => {
		const h = harness();
		const before = hmacCounter.count;
		let pulled = 0;
		const stream = new ReadableStream<Uint8Array>({
			pull(controller) {
				pulled++;
				controller.enqueue(new Uint8Array(1024));
				if (pulled > 3) controller.close();
			},
		});
		const stale = String(Date.now() - 3_600_000);
		const res = await call(
			h,
			new Request("https://receiver.test/webhooks/bloobank", {
				method: "POST",
				body: stream,
				headers: { "x-bloobank-timestamp": stale, "x-bloobank-signature": `t=${stale},v1=${"0".repeat(64)}` },
			}),
		);
		expect(res.status).toBe(401);
		expect(hmacCounter.count - before).toBe(0);
		expect(pulled).toBeLessThanOrEqual(1);
	});
});

describe("effects are per sender", () => {
	it.each<[string, Sender]>([
		["bold", boldSender],
		["pazy", pazySender],
		["standard", standardSender],
	])("%s events named like BlooBank orders create no effect and move no settled totals", async (_, sender) => {
		const h = harness();
		for (const [i, status] of ["SUCCESS", "REFUNDED", "FAILED"].entries()) {
			const body = JSON.stringify(payload(sender.name, `fx-${i}`, status));
			expect((await call(h, await senderRequest(sender, body, { messageId: `fx-${i}` }))).status).toBe(200);
		}
		for (const m of h.events.sent) await consume(h, [m]);
		expect(await countRows("resources")).toBe(1);
		expect(await countRows("effects")).toBe(0);
		expect(await countRows("settled_totals")).toBe(0);
	});
});

/** Each sender's envelope for a resource typed `payment_order`, with BlooBank-like fields. */
function payload(sender: string, messageId: string, status: string): object {
	const data = { id: "ord_1", wallet: "w1", status, amount: 100, currency: "BRL", ordVersion: 1 };
	const at = new Date(Date.parse("2026-11-30T10:00:00Z") + messageId.length * 1000).toISOString();
	switch (sender) {
		case "bold":
			return {
				eventId: messageId,
				eventName: "payment_order.updated",
				entity: "payment_order",
				entityId: "ord_1",
				occurredOn: at,
				majorVersion: 1,
				minorVersion: 0,
				payload: data,
			};
		case "pazy":
			return {
				id: messageId,
				type: `payment.${status.toLowerCase()}`,
				createdAt: at,
				data: { ...data, paymentId: "ord_1" },
			};
		default:
			return { type: `payment_order.${status.toLowerCase()}`, timestamp: at, data };
	}
}

describe("configuration that fails safe", () => {
	it.each([
		["ADMIN_TOKEN", { ADMIN_TOKEN: "short-token" }],
		["WEBHOOK_PATH_TOKEN", { WEBHOOK_PATH_TOKEN: "short-token" }],
		["SIGNATURE_TOLERANCE_SECONDS", { SIGNATURE_TOLERANCE_SECONDS: "3601" }],
		["MAX_BODY_BYTES", { MAX_BODY_BYTES: "2000000" }],
		["ALERT_WEBHOOK_URL", { ALERT_WEBHOOK_URL: "http://alerts.example/hook" }],
	])("%s: a refused value is a configuration error naming the variable", async (variable, vars) => {
		const health = await call(harness(vars), new Request("https://receiver.test/healthz"));
		expect(health.status).toBe(503);
		expect(await health.json()).toEqual({ ok: false, error: variable });
	});

	it("plain http to loopback stays allowed for outbound URLs (local tests)", async () => {
		const health = await call(
			harness({ ALERT_WEBHOOK_URL: "http://127.0.0.1:8788/hook" }),
			new Request("https://receiver.test/healthz"),
		);
		expect(health.status).toBe(200);
	});

	it("a published development value is refused unless the request comes to localhost", async () => {
		const h = harness({ STANDARD_WEBHOOK_SECRETS: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" });
		const remote = await call(h, new Request("https://receiver.test/healthz"));
		expect(remote.status).toBe(503);
		expect(await remote.json()).toEqual({ ok: false, error: "STANDARD_WEBHOOK_SECRETS" });
		expect((await call(h, new Request("http://localhost:8787/healthz"))).status).toBe(200);
		expect((await call(h, new Request("http://127.0.0.1:8787/healthz"))).status).toBe(200);
	});
});

describe("an order without a wallet", () => {
	it("takes its wallet from selfName or the older envelope's pathname, and is ignored (with a note) when none names one", async () => {
		const h = harness();
		const send = async (messageId: string, envelope: object) => {
			const res = await call(h, await signedRequest({ event: "payment_order.success", messageId, ...envelope }));
			expect(res.status).toBe(200);
		};
		const order = { id: "ord_nw", ordVersion: 1, status: "SUCCESS", amount: 5, currency: "BRL" };
		await send("nw-1", { data: { ...order, selfName: "wallets/w7/paymentOrders/ord_nw" } });
		await send("nw-2", {
			body: { ...order, id: "ord_nw2" },
			pathname: "/txengine/v1/wallets/w8/paymentOrders/ord_nw2",
		});
		await send("nw-3", { data: { ...order, id: "ord_nw3" } });
		await consume(h, h.events.sent);
		expect(await rows("SELECT wallet, id FROM resources ORDER BY id")).toEqual([
			{ wallet: "w7", id: "ord_nw" },
			{ wallet: "w8", id: "ord_nw2" },
		]);
		expect(await rows("SELECT message_id, status, note FROM deliveries WHERE message_id = 'nw-3'")).toEqual([
			{
				message_id: "nw-3",
				status: "ignored",
				note: "payment order without a wallet (its id is unique only within one)",
			},
		]);
	});
});

describe("review fixes", () => {
	it("a second pointer to a processed delivery, after a newer version moved state on, leaves it processed", async () => {
		const h = harness();
		const v1 = await ingest(h, "again-1", { id: "ord_again", ordVersion: 1, status: "PENDING" });
		const v2 = await ingest(h, "again-2", { id: "ord_again", ordVersion: 2, status: "PROCESSING" });
		await consume(h, [v1]);
		await consume(h, [v2]);
		// The sweep re-sends a slow `enqueued` row, or the queue redelivers: the pointer comes again.
		await consume(h, [v1]);
		expect(await rows("SELECT message_id, status, note FROM deliveries ORDER BY id")).toEqual([
			{ message_id: "again-1", status: "processed", note: null },
			{ message_id: "again-2", status: "processed", note: null },
		]);
	});

	it("a published secret in another spelling, or a spoofed Host from a non-loopback client, is still refused", async () => {
		const noPrefix = harness({ STANDARD_WEBHOOK_SECRETS: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" });
		expect((await call(noPrefix, new Request("https://receiver.test/healthz"))).status).toBe(503);
		const spoofed = new Request("http://localhost/healthz", { headers: { "cf-connecting-ip": "203.0.113.5" } });
		expect((await call(noPrefix, spoofed)).status).toBe(503);
		const local = new Request("http://localhost/healthz", { headers: { "cf-connecting-ip": "127.0.0.1" } });
		expect((await call(noPrefix, local)).status).toBe(200);
	});

	it("a request-time configuration error is counted, so the sweep's config_error alert fires", async () => {
		const h = harness({ STANDARD_WEBHOOK_SECRETS: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" });
		expect(
			(await call(h, await signedRequest(orderEvent("pub-1", { id: "o", ordVersion: 1, status: "PENDING" })))).status,
		).toBe(503);
		expect(await rows("SELECT reason, status FROM rejections")).toEqual([{ reason: "config_error", status: 503 }]);
		const fired = await runAlerts(harness().env, getConfig(harness().env), Date.now());
		expect(fired.map((t) => t.name)).toContain("config_error");
	});

	it("with Config itself broken, the cron still runs the alerts: config_error is posted", async () => {
		const posted: string[] = [];
		vi.spyOn(globalThis, "fetch").mockImplementation(async (_input, init) => {
			posted.push(String(init?.body));
			return new Response(null, { status: 200 });
		});
		try {
			const h = harness({ SWEEP_STALE_SECONDS: "soon", ALERT_WEBHOOK_URL: "https://alerts.test/hook" });
			const ctx = createExecutionContext();
			await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), h.env, ctx);
			await waitOnExecutionContext(ctx);
			expect(posted.map((b) => JSON.parse(b).alert)).toEqual(["config_error"]);
			expect(JSON.parse(posted[0] ?? "{}").detail).toMatch(/^SWEEP_STALE_SECONDS/);
		} finally {
			vi.restoreAllMocks();
		}
	});

	it("with WEBHOOK_PATH_TOKEN set, a GET on the plain path is 404 (the path does not exist), not 405", async () => {
		const h = harness({ WEBHOOK_PATH_TOKEN: "p4th-t0ken-0123456789abcdef0123456789" });
		expect((await call(h, new Request("https://receiver.test/webhooks/bloobank"))).status).toBe(404);
		expect(
			(await call(h, new Request("https://receiver.test/webhooks/bloobank/p4th-t0ken-0123456789abcdef0123456789")))
				.status,
		).toBe(405);
	});
});

describe("re-opening a failed delivery", () => {
	it("two concurrent re-sends of a failed delivery send it once; a plain duplicate stays one round trip", async () => {
		const h = harness();
		const body = orderEvent("twice-1", { id: "ord_twice", ordVersion: 1, status: "PENDING" });
		const msg = await ingest(h, "twice-1", { id: "ord_twice", ordVersion: 1, status: "PENDING" });
		await consume(h, [msg], "webhook-events-dlq");
		const before = h.events.sent.length;
		const answers = await Promise.all([call(h, await signedRequest(body)), call(h, await signedRequest(body))]);
		expect(answers.map((r) => r.status)).toEqual([200, 200]);
		expect(h.events.sent.length - before).toBe(1);
		await consume(h, [h.events.sent.at(-1) as QueueMessage]);
		expect(await rows("SELECT status, duplicates FROM deliveries")).toEqual([{ status: "processed", duplicates: 2 }]);
		const trips = h.db.roundTrips;
		expect((await call(h, await signedRequest(body))).status).toBe(200);
		expect(h.db.roundTrips - trips).toBe(1);
	});
});
