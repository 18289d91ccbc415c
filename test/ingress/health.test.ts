/**
 * Honest health (docs/design.md, configuration): /healthz answers 200 only when the Worker can do
 * its work, and a database without its migrations says so, in /healthz, in the answers and in the
 * log, with the command that fixes it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { getShards } from "../../src/env";
import { captureLogs } from "../support/alert-target";
import { orderEvent, signedRequest } from "../support/bloobank";
import { call, harness } from "../support/worker";

const NO_TABLE = "D1_ERROR: no such table: deliveries: SQLITE_ERROR";
const ADMIN = "health-test-admin-token-0123456789abcdef01";
let logs: ReturnType<typeof captureLogs> | null = null;
afterEach(() => {
	logs?.restore();
	logs = null;
});

function unmigrated(vars = {}) {
	const h = harness(vars);
	h.db.failRoundTrip = true;
	h.db.failMessage = NO_TABLE;
	return h;
}

describe("/healthz checks the schema", () => {
	it("answers 503 {ok:false,error:'migrations'} when a table the code uses is missing", async () => {
		const res = await call(unmigrated(), new Request("https://receiver.test/healthz"));
		expect(res.status).toBe(503);
		expect(await res.json()).toEqual({ ok: false, error: "migrations" });
	});

	it("answers 503 {ok:false,error:'d1'} when D1 cannot be reached", async () => {
		const h = harness();
		h.db.failRoundTrip = true;
		const res = await call(h, new Request("https://receiver.test/healthz"));
		expect(res.status).toBe(503);
		expect(await res.json()).toEqual({ ok: false, error: "d1" });
	});

	it("checks every table and column of src/db/schema.ts in one round trip, once per database binding", async () => {
		const h = harness();
		const shards = getShards(h.env).all.length;
		expect((await call(h, new Request("https://receiver.test/healthz"))).status).toBe(200);
		// One per shard; with several, the layout check (src/db/shards.ts) once per isolate too.
		expect(h.db.roundTrips).toBeGreaterThanOrEqual(shards);
		expect(h.db.roundTrips).toBeLessThanOrEqual(shards === 1 ? 1 : 2 * shards);
		expect(h.db.statementCount).toBeGreaterThanOrEqual(10 * shards);
		const first = h.db.roundTrips;
		// Migrations are not undone: once the schema held, /healthz costs no D1 query (a flood of it is free).
		expect((await call(h, new Request("https://receiver.test/healthz"))).status).toBe(200);
		expect(h.db.roundTrips).toBe(first);
	});

	it("a configuration error is named before the schema is checked", async () => {
		const res = await call(unmigrated({ ADMIN_TOKEN: "short" }), new Request("https://receiver.test/healthz"));
		expect(await res.json()).toEqual({ ok: false, error: "ADMIN_TOKEN" });
	});
});

describe("a missing table is reported as missing migrations", () => {
	it("a webhook answers 503 (retried) and the log says which command applies the migrations", async () => {
		logs = captureLogs();
		const h = unmigrated();
		const res = await call(
			h,
			await signedRequest(orderEvent("m-nomig", { id: "ord_nomig", ordVersion: 1, status: "SUCCESS" })),
		);
		expect(res.status).toBe(503);
		const line = logs.lines.find((l) => l.msg === "migrations_not_applied");
		expect(line).toMatchObject({ level: "error", provider: "bloobank" });
		expect(String(line?.hint)).toContain("npm run dev");
		expect(String(line?.hint)).toContain("wrangler d1 migrations apply DB --remote");
	});

	it("an admin request answers 503 {error:'migrations'} with the hint instead of a bare 500", async () => {
		logs = captureLogs();
		const h = unmigrated({ ADMIN_TOKEN: ADMIN });
		const res = await call(
			h,
			new Request("https://receiver.test/admin/deliveries", { headers: { authorization: `Bearer ${ADMIN}` } }),
		);
		expect(res.status).toBe(503);
		const body = (await res.json()) as { error: string; hint: string };
		expect(body.error).toBe("migrations");
		expect(body.hint).toContain("wrangler d1 migrations apply DB --remote");
		expect(logs.lines.some((l) => l.msg === "migrations_not_applied")).toBe(true);
	});
});
