import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { archiveKey } from "../../src/db/archive";
import { CANDIDATES, DELIVERY_COLUMNS } from "../../src/db/deliveries";
import { getConfig, getShards } from "../../src/env";
import type { QueueMessage } from "../../src/queue/messages";
import { ARCHIVE_CHUNK, ARCHIVE_GRACE_MS } from "../../src/sweep/archive";
import { pruneExpired } from "../../src/sweep/retention";
import { sweep } from "../../src/sweep/sweep";
import { consume, ingest } from "../support/apply";
import { orderEvent, signedRequest } from "../support/bloobank";
import { archiveAll, call, countRows, type Harness, harness, resetDb, rows } from "../support/worker";

beforeEach(resetDb);

const TOKEN = "scale-admin-token-0123456789abcdef0123456789";
const DAY = 24 * 60 * 60_000;
const later = () => Date.now() + ARCHIVE_GRACE_MS + 1;

function admin(h: Harness, method: string, path: string) {
	return call(
		h,
		new Request(`https://receiver.test${path}`, { method, headers: { authorization: `Bearer ${TOKEN}` } }),
	);
}

const stored = (messageId: string) =>
	rows<{ raw_body: string | null; archived_at: number | null; status: string }>(
		"SELECT raw_body, archived_at, status FROM deliveries WHERE message_id = ?1",
		messageId,
	);

describe("the body archive (R2)", () => {
	it("moves a settled body to R2 and out of D1, and the admin API reads it back", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const raw = JSON.stringify(orderEvent("ar-1", { id: "o-ar", ordVersion: 1, status: "PENDING" }));
		await consume(h, [await ingest(h, "ar-1", { id: "o-ar", ordVersion: 1, status: "PENDING" })]);

		// Within the grace after settling, the body stays in D1.
		expect(await archiveAll(h, Date.now())).toEqual({ archived: 0, failed: 0 });
		expect(await archiveAll(h, later())).toEqual({ archived: 1, failed: 0 });

		expect(await stored("ar-1")).toEqual([{ raw_body: null, archived_at: expect.any(Number), status: "processed" }]);
		expect(await (await env.ARCHIVE?.get(archiveKey("bloobank", "ar-1")))?.text()).toBe(raw);
		const d = await (await admin(h, "GET", "/admin/deliveries/bloobank/ar-1")).json<{ rawBody: string | null }>();
		expect(d.rawBody).toBe(raw);
		// Nothing left to move.
		expect(await archiveAll(h, later())).toEqual({ archived: 0, failed: 0 });
	});

	it("a replayed archived delivery is read back from R2 and applies once: one effect, totals counted once", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		await consume(h, [await ingest(h, "ar-paid", { id: "o-paid", ordVersion: 2, status: "SUCCESS", amount: 700 })]);
		expect(await archiveAll(h, later())).toMatchObject({ archived: 1 });

		const res = await admin(h, "POST", "/admin/deliveries/bloobank/ar-paid/replay");
		expect(res.status).toBe(202);
		const pointer = h.events.sent.at(-1) as QueueMessage;
		const gets = h.archive.gets;
		await consume(h, [pointer]);
		expect(h.archive.gets).toBe(gets + 1);
		expect(await stored("ar-paid")).toEqual([{ raw_body: null, archived_at: expect.any(Number), status: "processed" }]);
		expect(await rows("SELECT kind, status FROM effects")).toEqual([{ kind: "settled", status: "done" }]);
		expect(
			await rows(
				"SELECT currency, sum(count) AS count, sum(amount) AS amount FROM settled_totals GROUP BY currency ORDER BY currency",
			),
		).toEqual([{ currency: "BRL", count: 1, amount: 700 }]);
	});

	it("a replayed archived delivery whose R2 read fails is retried, not failed", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		await consume(h, [await ingest(h, "ar-get", { id: "o-get", ordVersion: 1, status: "PENDING" })]);
		await archiveAll(h, later());
		await admin(h, "POST", "/admin/deliveries/bloobank/ar-get/replay");
		h.archive.failGet = true;
		const result = await consume(h, [h.events.sent.at(-1) as QueueMessage]);
		expect(result.retryMessages).toHaveLength(1);
		expect((await stored("ar-get"))[0]?.status).toBe("enqueued");
		h.archive.failGet = false;
		await consume(h, [h.events.sent.at(-1) as QueueMessage]);
		expect((await stored("ar-get"))[0]?.status).toBe("processed");
	});

	it("a failed R2 put leaves the body in D1, and the next tick archives it", async () => {
		const h = harness();
		await consume(h, [await ingest(h, "ar-put", { id: "o-put", ordVersion: 1, status: "PENDING" })]);
		h.archive.failPut = true;
		expect(await archiveAll(h, later())).toEqual({ archived: 0, failed: 1 });
		expect((await stored("ar-put"))[0]).toMatchObject({ raw_body: expect.any(String), archived_at: null });
		h.archive.failPut = false;
		expect(await archiveAll(h, later())).toEqual({ archived: 1, failed: 0 });
	});

	it("a delivery that changes while its body is being written keeps its body in D1", async () => {
		const h = harness();
		const ignored = { event: "balance.updated", messageId: "ar-ign", data: { wallet: "w1", balance: 10 } };
		await call(h, await signedRequest(ignored));
		h.db.holdAfter = h.db.roundTrips + 1; // the candidate read goes through, the release waits
		const archiving = archiveAll(h, later());
		// The sender re-sends the ignored delivery (its recovery path): the row is re-opened meanwhile.
		await new Promise((resolve) => setTimeout(resolve, 50));
		await call(harness(), await signedRequest(ignored));
		h.db.release();
		expect(await archiving).toEqual({ archived: 0, failed: 0 });
		expect((await stored("ar-ign"))[0]).toMatchObject({ raw_body: expect.any(String), archived_at: null });
	});

	it("moves at most ARCHIVE_CHUNK bodies per tick", async () => {
		const h = harness();
		const now = Date.now() - 10 * 60_000;
		await env.DB.prepare(
			`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
       INSERT INTO deliveries (provider, message_id, event, status, raw_body, body_bytes, received_at, status_at)
       SELECT 'bloobank', 'bulk-' || i, 'e', 'processed', '{"n":' || i || '}', 8, ?2, ?2 FROM n`,
		)
			.bind(ARCHIVE_CHUNK + 7, now)
			.run();
		expect(await archiveAll(h, Date.now())).toEqual({
			archived: ARCHIVE_CHUNK,
			failed: 0,
		});
		expect(await archiveAll(h, Date.now())).toEqual({ archived: 7, failed: 0 });
		expect(h.archive.puts).toBe(ARCHIVE_CHUNK + 7);
	});

	it("the archive rewrites every column of a delivery: a column it does not list would be lost", async () => {
		const h = harness();
		await consume(h, [await ingest(h, "cols-1", { id: "o-cols", ordVersion: 1, status: "PENDING" })]);
		const before = (await rows("SELECT * FROM deliveries"))[0] ?? {};
		expect(Object.keys(before).sort()).toEqual([...DELIVERY_COLUMNS].sort());
		await archiveAll(h, later());
		const after = (await rows("SELECT * FROM deliveries"))[0] ?? {};
		expect(after).toEqual({ ...before, raw_body: null, archived_at: expect.any(Number) });
		expect(await countRows("delivery_moves")).toBe(0);
	});

	it("each tick reads only the rows still to archive (the partial index), never the archived ones", async () => {
		const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${CANDIDATES}`).bind(0, 1, 1).all<{ detail: string }>();
		const details = plan.results.map((r) => r.detail).join("\n");
		expect(details).toContain("USING INDEX deliveries_to_archive");
	});

	it("the sweep archives with the binding; without it bodies stay in D1 and are pruned after RETENTION_DAYS", async () => {
		const withArchive = harness();
		await consume(withArchive, [await ingest(withArchive, "sw-1", { id: "o-sw1", ordVersion: 1, status: "PENDING" })]);
		const report = await sweep(withArchive.env, getConfig(withArchive.env), later());
		expect(report.archive).toEqual({ archived: 1, failed: 0 });

		const without = harness({ ARCHIVE: undefined });
		await consume(without, [await ingest(without, "sw-2", { id: "o-sw2", ordVersion: 1, status: "PENDING" })]);
		const plain = await sweep(without.env, getConfig(without.env), later());
		expect(plain.archive).toBeNull();
		expect((await stored("sw-2"))[0]).toMatchObject({ raw_body: expect.any(String), archived_at: null });
		expect((await sweep(without.env, getConfig(without.env), Date.now() + 31 * DAY)).retention?.bodiesPruned).toBe(1);
	});

	it("with the archive bound, retention never drops a settled body that is not archived yet", async () => {
		const h = harness();
		await consume(h, [await ingest(h, "ret-1", { id: "o-ret", ordVersion: 1, status: "PENDING" })]);
		const report = await pruneExpired(getShards(env), getConfig(h.env), Date.now() + 31 * DAY, true);
		expect(report.bodiesPruned).toBe(0);
		expect((await stored("ret-1"))[0]?.raw_body).not.toBeNull();
	});
});
