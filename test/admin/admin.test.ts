import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { getShards } from "../../src/env";
import type { QueueMessage } from "../../src/queue/messages";
import { consume, ingest } from "../support/apply";
import { orderEvent, signedRequest } from "../support/bloobank";
import { call, type Harness, harness, resetDb, rows } from "../support/worker";

const TOKEN = "admin-test-token-0123456789abcdef0123456789";
beforeEach(resetDb);

const admin = () => harness({ ADMIN_TOKEN: TOKEN });
function get(h: Harness, path: string, token: string | null = TOKEN, init: RequestInit = {}) {
	const headers = new Headers(init.headers);
	if (token !== null) headers.set("authorization", `Bearer ${token}`);
	return call(h, new Request(`https://receiver.test${path}`, { ...init, headers }));
}
const post = (h: Harness, path: string, body?: unknown) =>
	get(h, path, TOKEN, {
		method: "POST",
		body: body === undefined ? undefined : JSON.stringify(body),
		headers: { "content-type": "application/json" },
	});

const ROUTES: [string, string][] = [
	["GET", "/admin/deliveries"],
	["GET", "/admin/deliveries/bloobank/x"],
	["POST", "/admin/deliveries/bloobank/x/replay"],
	["POST", "/admin/replay"],
	["GET", "/admin/rejections"],
	["GET", "/admin/resources/bloobank/payment_order/x"],
	["GET", "/admin/effects"],
	["POST", "/admin/effects/1/retry"],
	["GET", "/admin/metrics"],
];

describe("admin authentication", () => {
	it.each(ROUTES)(
		"%s %s: 404 without ADMIN_TOKEN, 401 for a missing, wrong or different-length token",
		async (method, path) => {
			expect((await get(harness(), path, TOKEN, { method })).status).toBe(404);
			const h = admin();
			expect((await get(h, path, null, { method })).status).toBe(401);
			expect((await get(h, path, "admin-test-token-0123456788", { method })).status).toBe(401);
			expect((await get(h, path, "short", { method })).status).toBe(401);
			expect((await get(h, path, `${TOKEN}-longer`, { method })).status).toBe(401);
			const ok = await get(h, path, TOKEN, { method, body: method === "POST" ? "{}" : undefined });
			expect([200, 202, 404]).toContain(ok.status);
			expect(ok.headers.get("content-type")).toContain("application/json");
		},
	);

	it("rejects a non-Bearer scheme", async () => {
		const res = await call(
			admin(),
			new Request("https://receiver.test/admin/metrics", { headers: { authorization: `Basic ${TOKEN}` } }),
		);
		expect(res.status).toBe(401);
	});
});

describe("deliveries", () => {
	it("lists with filters and a cursor that is stable under inserts", async () => {
		const h = admin();
		for (let i = 0; i < 5; i++)
			await call(h, await signedRequest(orderEvent(`list-${i}`, { id: `o-${i}`, ordVersion: 1, status: "PENDING" })));
		const first = await (await get(h, "/admin/deliveries?limit=2")).json<{
			items: { messageId: string }[];
			nextCursor: string;
		}>();
		expect(first.items.map((d) => d.messageId)).toEqual(["list-4", "list-3"]);
		// New deliveries arrive between pages: the next page continues where the first ended.
		for (let i = 5; i < 8; i++)
			await call(h, await signedRequest(orderEvent(`list-${i}`, { id: `o-${i}`, ordVersion: 1, status: "PENDING" })));
		const second = await (await get(h, `/admin/deliveries?limit=2&cursor=${first.nextCursor}`)).json<{
			items: { messageId: string }[];
			nextCursor: string;
		}>();
		expect(second.items.map((d) => d.messageId)).toEqual(["list-2", "list-1"]);
		const third = await (await get(h, `/admin/deliveries?limit=2&cursor=${second.nextCursor}`)).json<{
			items: unknown[];
			nextCursor: string | null;
		}>();
		expect(third.items).toHaveLength(1);
		expect(third.nextCursor).toBeNull();

		const filtered = await (
			await get(h, "/admin/deliveries?status=enqueued&provider=bloobank&event=payment_order.pending&limit=100")
		).json<{ items: unknown[] }>();
		expect(filtered.items).toHaveLength(8);
		expect(
			(await (await get(h, "/admin/deliveries?status=processed")).json<{ items: unknown[] }>()).items,
		).toHaveLength(0);
		expect((await get(h, "/admin/deliveries?status=bogus")).status).toBe(400);
		expect((await get(h, "/admin/deliveries?cursor=zzz")).status).toBe(400);
	});

	it("shows one delivery with its raw body and attempts", async () => {
		const h = admin();
		const raw = JSON.stringify(orderEvent("one-1", { id: "o-one", ordVersion: 1, status: "PENDING" }));
		await call(h, await signedRequest(raw));
		const d = await (await get(h, "/admin/deliveries/bloobank/one-1")).json<Record<string, unknown>>();
		expect(d).toMatchObject({
			provider: "bloobank",
			messageId: "one-1",
			status: "enqueued",
			rawBody: raw,
			attempts: 0,
			duplicates: 0,
			lastError: null,
		});
		expect((await get(h, "/admin/deliveries/bloobank/none")).status).toBe(404);
	});

	it("replays a processed delivery, a failed one (which then becomes processed), and 404s an unknown one", async () => {
		const h = admin();
		const a = await ingest(h, "rp-1", { id: "o-rp1", ordVersion: 2, status: "SUCCESS" });
		await consume(h, [a]);
		const replay = await post(h, "/admin/deliveries/bloobank/rp-1/replay");
		expect(replay.status).toBe(202);
		expect(h.events.sent.at(-1)).toEqual(a);
		await consume(h, [h.events.sent.at(-1) as QueueMessage]);
		expect(await rows("SELECT sum(count) AS count FROM settled_totals")).toEqual([{ count: 1 }]);

		const b = await ingest(h, "rp-2", { id: "o-rp2", ordVersion: 1, status: "PENDING" });
		await consume(h, [b], "webhook-events-dlq");
		expect((await rows("SELECT status FROM deliveries WHERE message_id = 'rp-2'"))[0]).toEqual({ status: "failed" });
		expect((await post(h, "/admin/deliveries/bloobank/rp-2/replay")).status).toBe(202);
		await consume(h, [h.events.sent.at(-1) as QueueMessage]);
		expect((await rows("SELECT status FROM deliveries WHERE message_id = 'rp-2'"))[0]).toEqual({ status: "processed" });

		expect((await post(h, "/admin/deliveries/bloobank/nope/replay")).status).toBe(404);
	});

	it("bulk replay counts what it re-enqueued, by provider, status and since", async () => {
		const h = admin();
		const msgs = [];
		for (let i = 0; i < 4; i++)
			msgs.push(await ingest(h, `bulk-${i}`, { id: `o-b${i}`, ordVersion: 1, status: "PENDING" }));
		await consume(h, msgs.slice(0, 2), "webhook-events-dlq");
		const sent = h.events.sent.length;
		expect(await (await post(h, "/admin/replay", { status: "failed" })).json()).toEqual({ replayed: 2 });
		expect(h.events.sent.length).toBe(sent + 2);
		expect(await (await post(h, "/admin/replay", { provider: "bold" })).json()).toEqual({ replayed: 0 });
		expect(
			await (await post(h, "/admin/replay", { since: new Date(Date.now() + 60_000).toISOString() })).json(),
		).toEqual({ replayed: 0 });
		expect(await (await post(h, "/admin/replay", { provider: "bloobank" })).json()).toEqual({ replayed: 4 });
		expect((await post(h, "/admin/replay", { status: "nope" })).status).toBe(400);
		expect((await post(h, "/admin/replay", { since: "yesterday-ish" })).status).toBe(400);
	});
});

describe("resources, effects, rejections", () => {
	it("reads a resource in the shape docs/design.md fixes", async () => {
		const h = admin();
		await consume(h, [await ingest(h, "res-1", { id: "ord_res", ordVersion: 3, status: "SUCCESS", amount: 250 })]);
		const r = await (await get(h, "/admin/resources/bloobank/payment_order/ord_res")).json<Record<string, unknown>>();
		expect(Object.keys(r).sort()).toEqual([
			"data",
			"id",
			"provider",
			"source",
			"status",
			"type",
			"updatedAt",
			"version",
			"wallet",
		]);
		expect(r).toMatchObject({
			provider: "bloobank",
			type: "payment_order",
			id: "ord_res",
			wallet: "w1",
			status: "SUCCESS",
			version: 3,
			source: "webhook",
		});
		expect((r.data as { amount: number }).amount).toBe(250);
		expect((await get(h, "/admin/resources/bloobank/payment_order/none")).status).toBe(404);
	});

	it("lists effects by status and rejections newest first", async () => {
		const h = admin();
		await consume(h, [await ingest(h, "eff-1", { id: "o-eff", ordVersion: 3, status: "SUCCESS" })]);
		const effects = await (await get(h, "/admin/effects?status=done")).json<{
			items: { kind: string }[];
			nextCursor: null;
		}>();
		expect(effects.items.map((e) => e.kind)).toEqual(["settled"]);
		expect((await (await get(h, "/admin/effects?status=pending")).json<{ items: unknown[] }>()).items).toHaveLength(0);

		await call(
			h,
			await signedRequest(orderEvent("bad-1", { id: "x", ordVersion: 1, status: "PENDING" }), { secret: "wrong" }),
		);
		await call(h, await signedRequest("not json"));
		const rej = await (await get(h, "/admin/rejections?limit=1")).json<{
			items: { reason: string }[];
			nextCursor: string;
		}>();
		expect(rej.items.map((r) => r.reason)).toEqual(["invalid_json"]);
		const next = await (await get(h, `/admin/rejections?cursor=${rej.nextCursor}`)).json<{
			items: { reason: string }[];
			nextCursor: null;
		}>();
		expect(next.items.map((r) => r.reason)).toEqual(["signature_mismatch"]);
		expect(next.nextCursor).toBeNull();
	});
});

describe("metrics", () => {
	it("reports numbers that match a seeded database", async () => {
		const h = admin();
		const now = Date.now();
		const seed = [
			["m1", "processed", 2, now - 1000],
			["m2", "processed", 0, now - 1000],
			["m3", "enqueued", 1, now - 120_000],
			["m4", "failed", 0, now - 1000],
			["m5", "received", 0, now - 30_000],
		] as const;
		for (const [id, status, dups, at] of seed) {
			await env.DB.prepare(
				"INSERT INTO deliveries (provider, message_id, event, status, body_bytes, received_at, status_at, duplicates) VALUES ('bloobank', ?1, 'e', ?2, 1, ?3, ?3, ?4)",
			)
				.bind(id, status, at, dups)
				.run();
		}
		await env.DB.prepare(
			"INSERT INTO settled_totals (currency, count, amount) VALUES ('BRL', 12, 345600), ('USD', 1, 5)",
		).run();
		const minute = Math.floor(now / 60_000);
		await env.DB.prepare(
			"INSERT INTO rejection_counts (minute, provider, reason, count) VALUES (?1, 'bloobank', 'signature_mismatch', 3), (?1, 'bold', 'signature_mismatch', 1), (?1, 'bloobank', 'too_large', 2), (?2, 'bloobank', 'too_large', 50)",
		)
			.bind(minute, minute - 25 * 60)
			.run();
		const m = await (await get(h, "/admin/metrics")).json<Record<string, unknown>>();
		expect(m.deliveries).toEqual({
			byStatus: { processed: 2, enqueued: 1, failed: 1, received: 1 },
			total: 5,
			duplicates: 3,
			duplicateRate: 0.375,
		});
		expect(m.rejections).toEqual({ windowHours: 24, byReason: { signature_mismatch: 4, too_large: 2 } });
		expect(m.oldestUnprocessedAgeSeconds).toBeGreaterThanOrEqual(120);
		expect(m.oldestUnprocessedAgeSeconds).toBeLessThan(130);
		expect(m.settled).toEqual({ BRL: { count: 12, amount: 345600 }, USD: { count: 1, amount: 5 } });
		expect(m.effects).toEqual({ pending: 0, failed: 0, done: 0 });
		expect(m).toHaveProperty("lastReconcile");
		// D1's own size figure (meta.size_after) summed over the shards, against D1's limit per
		// database on Workers Paid, once per shard.
		const shards = getShards(env).all;
		const sizes = await Promise.all(shards.map(async ({ db }) => (await db.prepare("SELECT 1").run()).meta.size_after));
		const size = sizes.reduce((a, b) => a + b, 0);
		expect(m.database).toEqual({ bytes: size, limitBytes: 10_000_000_000 * shards.length });
		expect(size).toBeGreaterThan(0);
	});
});
