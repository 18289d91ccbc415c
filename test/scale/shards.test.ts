/**
 * Shards (src/db/shards.ts, docs/design.md "storage at scale"). The whole suite also runs over
 * three shards (TEST_SHARDS=3 in `npm test`); the tests here check placement itself.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import {
	fnv1a,
	globalId,
	layoutMismatch,
	locate,
	SHARD_ID_SPAN,
	shardOfDelivery,
	shardOfResource,
	shardsFrom,
} from "../../src/db/shards";
import { getShards, parseShards } from "../../src/env";
import type { QueueMessage } from "../../src/queue/messages";
import { consume, ingest } from "../support/apply";
import { orderShard } from "../support/bloobank";
import { boldSender, senderRequest } from "../support/senders";
import { call, countRows, harness, resetDb, rows, rowsPerShard } from "../support/worker";

const sharded = getShards(env).all.length > 1;

/** A settled delivery written by hand: a database that holds it is "in use" for the layout check. */
const SETTLED_ROW = `INSERT INTO deliveries (provider, message_id, event, status, raw_body, body_bytes, received_at, status_at)
  VALUES ('bloobank', 'used-1', 'e', 'processed', '{}', 2, 1, 1)`;

beforeEach(resetDb);

describe("placement", () => {
	it("hashes with 32-bit FNV-1a: the published test vectors", () => {
		expect(fnv1a("")).toBe(0x811c9dc5);
		expect(fnv1a("a")).toBe(0xe40c292c);
		expect(fnv1a("foobar")).toBe(0xbf9cf968);
	});

	it("places a resource by (provider, type, wallet, id), the same way every time, and a wallet is part of the key", () => {
		const three = shardsFrom([env.DB, env.DB, env.DB]);
		const key = { provider: "bloobank", type: "payment_order", wallet: "w1", id: "ord_1" };
		const index = fnv1a("bloobank\u0000payment_order\u0000w1\u0000ord_1") % 3;
		expect(shardOfResource(three, key).index).toBe(index);
		expect(
			shardOfDelivery(three, "bloobank", "any-message", { type: "payment_order", wallet: "w1", id: "ord_1" }).index,
		).toBe(index);
		// Over many ids all three shards are used, and other wallets of one id may land elsewhere.
		const used = new Set(
			Array.from({ length: 60 }, (_, i) => shardOfResource(three, { ...key, id: `ord_${i}` }).index),
		);
		expect(used).toEqual(new Set([0, 1, 2]));
		// A delivery without a resource is placed by its message id, so its duplicates find it.
		expect(shardOfDelivery(three, "bloobank", "m-1", null).index).toBe(fnv1a("bloobank\u0000m-1") % 3);
	});

	it("ids that leave a shard name it; the home shard's are unchanged", () => {
		const three = shardsFrom([env.DB, env.DB, env.DB]);
		expect(globalId(0, 42)).toBe(42);
		expect(globalId(2, 42)).toBe(2 * SHARD_ID_SPAN + 42);
		expect(locate(three, globalId(2, 42))).toMatchObject({ shard: { index: 2 }, id: 42 });
		expect(locate(three, globalId(3, 42))).toBeNull();
		expect(locate(three, -1)).toBeNull();
	});

	it("DB_SHARDS must start with DB, list D1 bindings only, and never one twice", () => {
		expect(() => parseShards({ ...env, DB_SHARDS: "DB_1,DB" })).toThrow(/DB_SHARDS/);
		expect(() => parseShards({ ...env, DB_SHARDS: "DB,EVENTS" })).toThrow(/EVENTS is not a D1 binding/);
		expect(() => parseShards({ ...env, DB_SHARDS: "DB,DB" })).toThrow(/twice/);
		expect(parseShards({ ...env, DB_SHARDS: "" }).all).toHaveLength(1);
	});
});

describe("the layout check", () => {
	it("a shard holding data refuses another layout than the one it recorded; an empty one takes the new one", async () => {
		await env.DB.prepare("DELETE FROM heartbeats").run();
		expect(await layoutMismatch(shardsFrom([env.DB]), Date.now())).toBeNull();
		expect(await layoutMismatch(shardsFrom([env.DB]), Date.now())).toBeNull();
		// Nothing stored yet: the list may still change (a deployment set up, then given shards).
		expect(await layoutMismatch(shardsFrom([env.DB, env.DB]), Date.now())).toBeNull();
		expect(await layoutMismatch(shardsFrom([env.DB]), Date.now())).toBeNull();
		// Once it holds data, the same database claimed as shard 0 of two: its record says "0 of 1".
		await env.DB.prepare(SETTLED_ROW).run();
		expect((await layoutMismatch(shardsFrom([env.DB, env.DB]), Date.now()))?.index).toBe(0);
		expect(await layoutMismatch(shardsFrom([env.DB]), Date.now())).toBeNull();
	});

	it("data no layout was recorded for (a deployment from before the check) is refused under several shards, kept under one", async () => {
		await env.DB.prepare("DELETE FROM heartbeats").run();
		await env.DB.prepare(SETTLED_ROW).run();
		expect((await layoutMismatch(shardsFrom([env.DB, env.DB]), Date.now()))?.index).toBe(0);
		expect(await layoutMismatch(shardsFrom([env.DB]), Date.now())).toBeNull();
	});

	it.runIf(sharded)("webhooks answer 503 and /healthz names DB_SHARDS when the list shrank after use", async () => {
		const h = harness();
		expect((await call(h, new Request("https://receiver.test/healthz"))).status).toBe(200);
		// Every shard in use (an empty shard would simply take the new layout).
		await rowsPerShard(SETTLED_ROW);
		const fewer = harness({ DB_SHARDS: "DB,DB_1" });
		const health = await call(fewer, new Request("https://receiver.test/healthz"));
		expect(health.status).toBe(503);
		expect(await health.json()).toEqual({ ok: false, error: "DB_SHARDS" });
		await expect(ingest(fewer, "after-shrink", { id: "ord_x", ordVersion: 1, status: "PENDING" })).rejects.toThrow(
			/answered 503/,
		);
		expect(fewer.events.sent).toHaveLength(0);
		// Shrunk back to one database: refused too, on the webhook path and in the consumer.
		const one = harness({ DB_SHARDS: "DB" });
		await expect(ingest(one, "after-shrink-2", { id: "ord_y", ordVersion: 1, status: "PENDING" })).rejects.toThrow(
			/answered 503/,
		);
		// An order of the home shard, so only the layout check can hold its pointer back.
		const homeOrder = Array.from({ length: 64 }, (_, i) => `ord_z${i}`).find((id) => orderShard(id).index === 0) ?? "";
		const pointer = await ingest(h, "before-shrink", { id: homeOrder, ordVersion: 1, status: "PENDING" });
		const held = await consume(one, [pointer]);
		// Acked without applying: the row stays `enqueued` for the sweep to re-send once the list is back.
		expect(held.explicitAcks).toHaveLength(1);
		expect(await rows("SELECT status FROM deliveries WHERE message_id = 'before-shrink'")).toEqual([
			{ status: "enqueued" },
		]);
		expect(await countRows("resources")).toBe(0);
		// Its dead letter, should one come, marks nothing either.
		await consume(one, [pointer], "webhook-events-dlq");
		expect(await rows("SELECT status FROM deliveries WHERE message_id = 'before-shrink'")).toEqual([
			{ status: "enqueued" },
		]);
	});
});

describe.runIf(sharded)("a resource's deliveries and effects share its shard", () => {
	it("every row of an order is in the shard its key hashes to, and nowhere else", async () => {
		const h = harness();
		const ids = ["ord_a", "ord_b", "ord_c", "ord_d", "ord_e", "ord_f"];
		const pointers = [];
		for (const [i, id] of ids.entries()) {
			pointers.push(await ingest(h, `p-${i}`, { id, ordVersion: 1, status: "PENDING" }));
			pointers.push(await ingest(h, `s-${i}`, { id, ordVersion: 2, status: "SUCCESS", amount: 100 + i }));
		}
		// One consumer batch over every shard: each shard applies its own orders.
		const result = await consume(h, pointers);
		expect(result.explicitAcks).toHaveLength(pointers.length);
		const where = async (sql: string) =>
			(await rowsPerShard<{ id: string }>(sql)).flatMap((list, shard) => list.map((r) => `${r.id}@${shard}`)).sort();
		const expected = (times: number) =>
			ids
				.flatMap((id) =>
					Array.from({ length: times }, () => {
						const { index } = orderShard(id);
						return `${id}@${index}`;
					}),
				)
				.sort();
		expect(await where("SELECT resource_id AS id FROM deliveries")).toEqual(expected(2));
		expect(await where("SELECT id FROM resources")).toEqual(expected(1));
		expect(await where("SELECT resource_id AS id FROM effects WHERE status = 'done'")).toEqual(expected(1));
		// The orders really are spread: more than one shard holds some.
		expect(new Set((await where("SELECT id FROM resources")).map((s) => s.split("@")[1])).size).toBeGreaterThan(1);
	});
});

describe.runIf(sharded)("a delivery stored without a resource, replayed once it parses", () => {
	it("is applied in its resource's shard, never in the shard its message id placed it in", async () => {
		const shards = getShards(env);
		const TOKEN = "shards-test-admin-token-0123456789abcdef";
		// A message id whose placement differs from the shard of the charge it names.
		const resourceShard = shardOfResource(shards, { provider: "bold", type: "charge", wallet: "", id: "ch_rh" });
		const messageId =
			Array.from({ length: 64 }, (_, i) => `bold-rh-${i}`).find(
				(m) => shardOfDelivery(shards, "bold", m, null).index !== resourceShard.index,
			) ?? "";
		const body = JSON.stringify({
			eventId: messageId,
			eventName: "charge.paid",
			entity: "charge",
			entityId: "ch_rh",
			occurredOn: "2026-11-30T10:00:00Z",
			majorVersion: 2,
			minorVersion: 0,
			payload: { status: "paid" },
		});
		// Stored `ignored` (major version 2 not enabled), placed by its message id.
		const before = harness({ ADMIN_TOKEN: TOKEN });
		expect((await call(before, await senderRequest(boldSender, body, { messageId }))).status).toBe(200);
		const placed = shardOfDelivery(shards, "bold", messageId, null).index;
		expect((await rowsPerShard("SELECT status FROM deliveries"))[placed]).toEqual([{ status: "ignored" }]);

		// Enabled, then replayed by the operator: the row's shard is not the charge's.
		const after = harness({ ADMIN_TOKEN: TOKEN, BOLD_SUPPORTED_MAJOR_VERSIONS: "1,2" });
		const replay = await call(
			after,
			new Request(`https://receiver.test/admin/deliveries/bold/${messageId}/replay`, {
				method: "POST",
				headers: { authorization: `Bearer ${TOKEN}` },
			}),
		);
		expect(replay.status).toBe(202);
		await consume(after, after.events.sent);
		// The row is settled with a note; its state went to the charge's shard as a snapshot.
		const [row] =
			(await rowsPerShard<{ status: string; note: string }>("SELECT status, note FROM deliveries"))[placed] ?? [];
		expect(row).toEqual({
			status: "ignored",
			note: `resource in shard ${resourceShard.index}: applied there as a snapshot`,
		});
		const snapshots = after.events.sent.filter((m) => m.kind === "snapshot");
		expect(snapshots).toHaveLength(1);
		await consume(after, snapshots);
		const resources = await rowsPerShard<{ id: string; status: string }>("SELECT id, status FROM resources");
		expect(resources.map((list) => list.length)).toEqual(shards.all.map((s) => (s === resourceShard ? 1 : 0)));
		expect(resources[resourceShard.index]).toEqual([{ id: "ch_rh", status: "PAID" }]);
	});
});

describe("a moved state that dead-letters", () => {
	it("marks the delivery it came from failed, visible and replayable, instead of leaving it noted as applied", async () => {
		const h = harness();
		const [row] = await rows<{ id: number }>(
			`INSERT INTO deliveries (provider, message_id, event, status, raw_body, body_bytes, received_at, status_at, note)
       VALUES ('bloobank', 'moved-1', 'e', 'ignored', '{}', 2, 1, 1, 'resource in shard 1: applied there as a snapshot')
       RETURNING id`,
		);
		const snapshot: QueueMessage = {
			kind: "snapshot",
			provider: "bloobank",
			runId: null,
			origin: globalId(0, row?.id ?? 0),
			resource: { type: "payment_order", id: "ord_m", wallet: "w1", version: 1, status: "PENDING", data: {} },
		};
		await consume(h, [snapshot], "webhook-events-dlq");
		expect(await rows("SELECT status, last_error FROM deliveries WHERE message_id = 'moved-1'")).toEqual([
			{ status: "failed", last_error: "its state, moved to its resource's shard, dead-lettered there" },
		]);
	});
});
