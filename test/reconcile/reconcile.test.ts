import {
	createExecutionContext,
	createMessageBatch,
	createScheduledController,
	getQueueResult,
	waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ACCESS_KEY, BASE_URL, errorBody, FakeBlooBank, fakeApiVars } from "../../fixtures/fake-bloobank";
import { DAILY_RECONCILE_CRON } from "../../src/cron";
import { getShards, parseReconcileConfig } from "../../src/env";
import worker from "../../src/index";
import { blooBankOrderSnapshot } from "../../src/providers/bloobank";
import { MAX_SNAPSHOT_MESSAGE_BYTES, messageBytes } from "../../src/queue/enqueue";
import type { QueueMessage, ReconcileJob, SnapshotMessage } from "../../src/queue/messages";
import { QUEUE_NAMES } from "../../src/queue/messages";
import {
	ApiClient,
	type ClientDeps,
	MAX_ATTEMPTS,
	MAX_INLINE_RETRY_AFTER_MS,
	MAX_RESPONSE_BYTES,
	MAX_RETRY_AFTER_SECONDS,
	PAGE_SIZE,
	REQUEST_TIMEOUT_MS,
} from "../../src/reconcile/client";
import { MAX_PAGES_PER_INVOCATION, MAX_RETRIES, pagesPerInvocation } from "../../src/reconcile/window";
import { consume, ingest } from "../support/apply";
import { type Harness, harness, resetDb, rows } from "../support/worker";

const RECONCILE_VARS = { ...fakeApiVars(), RECONCILE_LOOKBACK_HOURS: "6" };

let fake: FakeBlooBank;
beforeEach(async () => {
	await resetDb();
	fake = new FakeBlooBank();
	vi.spyOn(globalThis, "fetch").mockImplementation(fake.fetch);
});
afterEach(() => vi.restoreAllMocks());

const h0 = (vars: Record<string, string> = {}) => harness({ ...RECONCILE_VARS, ...vars });

const ADMIN = "reconcile-test-admin-token-0123456789abcdef";

async function post(h: Harness, path: string): Promise<Response> {
	const ctx = createExecutionContext();
	const res = await worker.fetch(
		new Request(`https://receiver.test${path}`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` } }),
		{ ...h.env, ADMIN_TOKEN: ADMIN },
		ctx,
	);
	await waitOnExecutionContext(ctx);
	return res;
}

interface InvocationCount {
	d1: number;
	fetches: number;
	queueCalls: number;
}

/** Runs one queued RECONCILE job (the i-th sent) in its own invocation, counting what it cost. */
async function runJob(h: Harness, i: number): Promise<InvocationCount> {
	const job = h.reconcile.sent[i] as ReconcileJob;
	const [d1, fetches, queueCalls] = [h.db.roundTrips, fake.requests.length, h.events.calls + h.reconcile.calls];
	const batch = createMessageBatch<ReconcileJob>(QUEUE_NAMES.reconcile, [
		{ id: `r-${i}`, timestamp: new Date(), attempts: 1, body: job },
	]);
	const ctx = createExecutionContext();
	await worker.queue(batch, h.env, ctx);
	const result = await getQueueResult(batch, ctx);
	expect(result.explicitAcks).toEqual([`r-${i}`]);
	return {
		d1: h.db.roundTrips - d1,
		fetches: fake.requests.length - fetches,
		queueCalls: h.events.calls + h.reconcile.calls - queueCalls,
	};
}

/** A job that re-queues itself forever must fail the test, not hang it. */
const MAX_INVOCATIONS = 200;

/** Runs every queued RECONCILE job (continuations included), one invocation each, counting per invocation. */
async function runJobs(h: Harness, from = 0): Promise<InvocationCount[]> {
	const counts: InvocationCount[] = [];
	for (let i = from; i < h.reconcile.sent.length; i++) {
		if (counts.length >= MAX_INVOCATIONS) throw new Error(`still re-queueing after ${MAX_INVOCATIONS} invocations`);
		counts.push(await runJob(h, i));
	}
	return counts;
}

async function applySnapshots(h: Harness, from = 0): Promise<void> {
	const snapshots = h.events.sent.slice(from).filter((m) => m.kind === "snapshot");
	for (let i = 0; i < snapshots.length; i += 100) await consume(h, snapshots.slice(i, i + 100) as QueueMessage[]);
}

const runs = () => rows<Record<string, unknown>>("SELECT * FROM reconcile_runs ORDER BY rowid");

describe("request signing", () => {
	it.each(["compact", "der"] as const)(
		"every request verifies with the library and the public key (%s)",
		async (format) => {
			fake = new FakeBlooBank(format);
			vi.spyOn(globalThis, "fetch").mockImplementation(fake.fetch);
			fake.seed(3);
			const h = h0({ BLOOBANK_SIGNATURE_FORMAT: format });
			expect((await post(h, "/admin/reconcile")).status).toBe(202);
			await runJobs(h);
			expect(fake.requests.length).toBeGreaterThan(0);
			expect(fake.requests.every((r) => r.authenticated)).toBe(true);
		},
	);

	it("a fresh request id and timestamp on every attempt, retries included", async () => {
		fake.seed(1);
		fake.script(
			() => new Response("oops", { status: 502 }),
			() => new Response("oops", { status: 503 }),
		);
		const h = h0();
		await post(h, "/admin/reconcile");
		await runJobs(h);
		// Three attempts, all authenticated: a reused request id would have been REPLAY_DETECTED.
		expect(fake.requests.map((r) => r.authenticated)).toEqual([true, true, true]);
		expect((await runs())[0]).toMatchObject({ status: "done", orders_seen: 1 });
	});

	it("the fake really refuses bad signatures (so the checks above can fail)", async () => {
		const res = await fake.fetch(`${BASE_URL}/wallets/w1/paymentOrders`, {
			headers: {
				"x-access-key": ACCESS_KEY,
				"x-access-timestamp": String(Date.now()),
				"x-access-request-id": crypto.randomUUID(),
				"x-access-signature": btoa("x".repeat(64)),
			},
		});
		expect(res.status).toBe(401);
		expect(fake.requests[0]?.reason).toBe("INVALID_SIGNATURE");
	});
});

describe("drift found and repaired", () => {
	it("missing, behind and ahead locally; effects fire once for repaired SUCCESS orders", async () => {
		const h = h0();
		// Local state: B behind (v1 PENDING), C ahead (v5), D equal (v3).
		await consume(h, [
			await ingest(h, "b1", { id: "ord_B", ordVersion: 1, status: "PENDING", wallet: "w1" }),
			await ingest(h, "c5", { id: "ord_C", ordVersion: 5, status: "FAILED", wallet: "w1" }),
			await ingest(h, "d3", { id: "ord_D", ordVersion: 3, status: "SUCCESS", wallet: "w1", amount: 7 }),
		]);
		const at = Date.now() - 60 * 60_000;
		fake.seed(1, () => ({ id: "ord_A", ordVersion: 2, status: "SUCCESS", amount: 1000 }), "w1", at);
		fake.seed(1, () => ({ id: "ord_B", ordVersion: 3, status: "SUCCESS", amount: 2000 }), "w1", at);
		fake.seed(1, () => ({ id: "ord_C", ordVersion: 4, status: "PROCESSING" }), "w1", at);
		fake.seed(1, () => ({ id: "ord_D", ordVersion: 3, status: "SUCCESS", amount: 7 }), "w1", at);

		const start = await post(h, "/admin/reconcile");
		const { runId } = await start.json<{ runId: string }>();
		await runJobs(h);
		await applySnapshots(h);
		expect(
			h.events.sent.filter((m) => m.kind === "snapshot").map((m) => m.kind === "snapshot" && m.resource.id),
		).toEqual(["ord_A", "ord_B"]);

		expect(await rows("SELECT id, version, status, source FROM resources ORDER BY id")).toEqual([
			{ id: "ord_A", version: 2, status: "SUCCESS", source: "reconcile" },
			{ id: "ord_B", version: 3, status: "SUCCESS", source: "reconcile" },
			{ id: "ord_C", version: 5, status: "FAILED", source: "webhook" },
			{ id: "ord_D", version: 3, status: "SUCCESS", source: "webhook" },
		]);
		expect(await rows("SELECT sum(count) AS count, sum(amount) AS amount FROM settled_totals")).toEqual([
			{ count: 3, amount: 3007 },
		]);
		const [run] = await runs();
		expect(run).toMatchObject({ id: runId, status: "done", orders_seen: 4, repaired: 2, windows_failed: 0 });

		// A second run finds nothing and fires nothing.
		const sent = h.events.sent.length;
		const jobs = h.reconcile.sent.length;
		await post(h, "/admin/reconcile");
		await runJobs(h, jobs);
		await applySnapshots(h, sent);
		expect((await runs())[1]).toMatchObject({ status: "done", repaired: 0 });
		expect(await rows("SELECT sum(count) AS count, sum(amount) AS amount FROM settled_totals")).toEqual([
			{ count: 3, amount: 3007 },
		]);
	});
});

describe("paging", () => {
	it("pages across many pages with continuations, and advances the watermark when done", async () => {
		const h = h0();
		fake.seed(2_450);
		await post(h, "/admin/reconcile");
		const invocations = await runJobs(h);
		// 25 pages, at most MAX_PAGES_PER_INVOCATION per invocation (fewer with shards: pagesPerInvocation).
		expect(invocations).toHaveLength(Math.ceil(25 / pagesPerInvocation(getShards(env).all.length)));
		const [run] = await runs();
		expect(run).toMatchObject({
			status: "done",
			pages: 25,
			orders_seen: 2_450,
			repaired: 2_450,
			windows_planned: 1,
			windows_done: 1,
		});
		expect(await rows("SELECT wallet, completed_to = ? AS at_end FROM reconcile_watermarks", run?.period_to)).toEqual([
			{ wallet: "w1", at_end: 1 },
		]);
	});

	it("an expired page token restarts the window, and the run still completes", async () => {
		const h = h0();
		fake.seed(350);
		// The first request that carries a page token finds it expired.
		fake.script((req) =>
			new URL(req.url).searchParams.has("page_token")
				? errorBody(400, "INVALID_ARGUMENT", "INVALID_PAGE_TOKEN", "expired")
				: null,
		);
		await post(h, "/admin/reconcile");
		await runJobs(h);
		expect(await rows("SELECT restarts, status, pages FROM reconcile_windows")).toEqual([
			{ restarts: 1, status: "done", pages: 5 },
		]);
		expect((await runs())[0]).toMatchObject({ status: "done", orders_seen: 450 });
		// Every order was found at least once; re-reads after a restart re-apply idempotently.
		const ids = new Set(h.events.sent.flatMap((m) => (m.kind === "snapshot" ? [m.resource.id] : [])));
		expect(ids.size).toBe(350);
	});

	it("the watermark does not advance when a window fails", async () => {
		const h = h0({ RECONCILE_LOOKBACK_HOURS: "12" });
		fake.seed(5);
		fake.script(() =>
			Response.json(
				{ error: { code: 404, status: "NOT_FOUND", message: "wallet", details: [{ reason: "WALLET_NOT_FOUND" }] } },
				{ status: 404 },
			),
		);
		await post(h, "/admin/reconcile");
		await runJobs(h);
		const [run] = await runs();
		expect(run).toMatchObject({ status: "failed", windows_failed: 1, windows_done: 1 });
		expect(JSON.parse(String(run?.errors))[0]).toContain("404 NOT_FOUND WALLET_NOT_FOUND");
		expect(await rows("SELECT * FROM reconcile_watermarks")).toEqual([]);
	});
});

describe("provider errors", () => {
	it("429 with a short Retry-After is slept through, a long one re-queues the job with that delay", async () => {
		const h = h0();
		fake.seed(3);
		fake.script(
			() => new Response(null, { status: 429, headers: { "retry-after": "1" } }),
			() => new Response(null, { status: 429, headers: { "retry-after": "120" } }),
		);
		await post(h, "/admin/reconcile");
		const started = Date.now();
		await runJobs(h);
		expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
		expect(h.reconcile.delays).toContain(120);
		expect((await runs())[0]).toMatchObject({ status: "done", orders_seen: 3 });
	});

	it("malformed JSON is retried like a 5xx", async () => {
		const h = h0();
		fake.seed(2);
		fake.script(() => new Response("{not json", { status: 200, headers: { "content-type": "application/json" } }));
		await post(h, "/admin/reconcile");
		await runJobs(h);
		expect((await runs())[0]).toMatchObject({ status: "done", orders_seen: 2 });
	});

	it("wrong credentials: the run fails with a clear error, no crash loop", async () => {
		const h = h0({ BLOOBANK_ACCESS_KEY: "ak_wrong" });
		fake.seed(2);
		await post(h, "/admin/reconcile");
		await runJobs(h);
		const [run] = await runs();
		expect(run).toMatchObject({ status: "failed", windows_failed: 1 });
		expect(String(run?.errors)).toContain("credentials rejected (401 UNAUTHENTICATED)");
		// A 401 is not retried, and the job is not re-queued: no crash loop.
		expect(fake.requests).toHaveLength(1);
		expect(h.reconcile.sent).toHaveLength(1);
	});

	it("missing credentials: a failed run with the configuration error, and no jobs", async () => {
		const h = harness({ BLOOBANK_WALLETS: "w1" });
		const res = await post(h, "/admin/reconcile");
		expect(res.status).toBe(202);
		expect(await res.json()).toMatchObject({ windows: 0, error: "configuration: BLOOBANK_ACCESS_KEY is not set" });
		expect(h.reconcile.sent).toHaveLength(0);
		expect((await runs())[0]).toMatchObject({
			status: "failed",
			errors: '["configuration: BLOOBANK_ACCESS_KEY is not set"]',
		});
	});

	it("a hanging request times out and is retried; the default timeout is at most 3 s", async () => {
		expect(REQUEST_TIMEOUT_MS).toBeLessThanOrEqual(3_000);
		const parsed = parseReconcileConfig({ ...RECONCILE_VARS } as never);
		if (!parsed.ok) throw new Error(parsed.error);
		let calls = 0;
		const deps: ClientDeps = {
			fetch: async (input, init) => {
				calls++;
				if (calls === 1) {
					return new Promise<Response>((_, reject) =>
						init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
					);
				}
				return fake.fetch(input, init);
			},
			now: Date.now,
			sleep: async () => {},
			random: () => 0.5,
			timeoutMs: 50,
		};
		fake.seed(1);
		const client = new ApiClient(parsed.config, deps);
		const res = await client.listPage("w1", {
			filter: "updatedAt>=2000-01-01T00:00:00Z AND updatedAt<2100-01-01T00:00:00Z",
			orderBy: "updatedAt asc",
			pageToken: null,
		});
		expect(calls).toBe(2);
		expect(res.ok && res.value.items).toHaveLength(1);
	});

	it("a provider down for every attempt: the window is retried later with backoff, not failed", async () => {
		const h = h0({ RECONCILE_LOOKBACK_HOURS: "2" });
		fake.seed(1);
		fake.script(...Array.from({ length: 3 }, () => () => new Response(null, { status: 500 })));
		await post(h, "/admin/reconcile");
		await runJobs(h);
		expect(h.reconcile.delays.filter((d) => d !== undefined)).toEqual([30]);
		expect((await runs())[0]).toMatchObject({ status: "done", orders_seen: 1 });
	});
});

describe("limits", () => {
	it("a window of 5,000 orders stays under the per-invocation limits", async () => {
		const h = h0({ RECONCILE_LOOKBACK_HOURS: "6" });
		fake.seed(5_000);
		await post(h, "/admin/reconcile");
		const invocations = await runJobs(h);
		expect((await runs())[0]).toMatchObject({ status: "done", orders_seen: 5_000, pages: 50 });
		const max = (k: keyof InvocationCount) => Math.max(...invocations.map((i) => i[k]));
		// Free plan: 50 subrequests and 50 D1 queries per invocation; paid: 1,000 of each.
		expect(max("fetches") + max("queueCalls")).toBeLessThanOrEqual(50);
		expect(max("d1")).toBeLessThanOrEqual(MAX_PAGES_PER_INVOCATION + 2);
	}, 60_000);
});

describe("the daily cron", () => {
	it("only plans: one job per window, sent with sendBatch", async () => {
		const h = h0({ BLOOBANK_WALLETS: "w1,w2", RECONCILE_LOOKBACK_HOURS: "48" });
		const ctx = createExecutionContext();
		await worker.scheduled(
			createScheduledController({ scheduledTime: new Date(), cron: DAILY_RECONCILE_CRON }),
			h.env,
			ctx,
		);
		await waitOnExecutionContext(ctx);
		expect(fake.requests).toHaveLength(0);
		expect(h.reconcile.sent).toHaveLength(16);
		expect(h.reconcile.calls).toBe(1);
		expect((await runs())[0]).toMatchObject({ trigger: "cron", status: "running", windows_planned: 16 });
	});

	it("does nothing while BLOOBANK_WALLETS is empty (reconciliation off)", async () => {
		const h = h0({ BLOOBANK_WALLETS: "" });
		const ctx = createExecutionContext();
		await worker.scheduled(
			createScheduledController({ scheduledTime: new Date(), cron: DAILY_RECONCILE_CRON }),
			h.env,
			ctx,
		);
		await waitOnExecutionContext(ctx);
		expect(h.reconcile.sent).toHaveLength(0);
		expect(await runs()).toEqual([]);
	});
});

const HOUR = 60 * 60_000;
const snapshotsSent = (h: Harness) => h.events.sent.filter((m): m is SnapshotMessage => m.kind === "snapshot");
const runErrors = async (i = 0) => JSON.parse(String((await runs())[i]?.errors)) as string[];

describe("reconciliation never moves past what it did not apply", () => {
	it("a snapshot that dead-letters after its run is done puts the watermark back, and the next run applies it", async () => {
		const h = h0();
		const now = Date.now();
		// A day since the last run: this run covers 30 hours in 5 windows, the next only 6 hours back.
		await rows(
			"INSERT INTO reconcile_watermarks (wallet, completed_to, run_id) VALUES ('w1', ?1, 'earlier')",
			now - 24 * HOUR,
		);
		const [lost] = fake.seed(1, () => ({}), "w1", now - 29 * HOUR);
		fake.seed(1, () => ({}), "w1", now - HOUR);
		await post(h, "/admin/reconcile");
		await runJobs(h);
		const planned = Number((await runs())[0]?.windows_planned);
		expect(planned).toBeGreaterThanOrEqual(5);
		expect((await runs())[0]).toMatchObject({ status: "done", repaired: 2, windows_done: planned });

		const dead = snapshotsSent(h).find((m) => m.resource.id === lost?.id) as QueueMessage;
		await consume(h, snapshotsSent(h).filter((m) => m !== dead) as QueueMessage[]);
		const result = await consume(h, [dead], QUEUE_NAMES.eventsDeadLetter);
		expect(result.retryBatch.retry).toBe(false);

		expect((await runs())[0]).toMatchObject({ status: "failed", windows_done: planned - 1, windows_failed: 1 });
		expect((await runErrors(0)).join("\n")).toContain(`w1#0: snapshot ${lost?.id} dead-lettered`);
		expect(await rows("SELECT idx, status FROM reconcile_windows WHERE status != 'done'")).toEqual([
			{ idx: 0, status: "failed" },
		]);

		// The next run goes back far enough to list the order again, and the writer applies it.
		const [jobs, sent] = [h.reconcile.sent.length, h.events.sent.length];
		await post(h, "/admin/reconcile");
		await runJobs(h, jobs);
		await applySnapshots(h, sent);
		expect(await rows("SELECT id FROM resources WHERE id = ?1", lost?.id)).toEqual([{ id: lost?.id }]);
		const second = (await runs())[1];
		expect(second).toMatchObject({ status: "done" });
		expect(await rows("SELECT completed_to = ?1 AS at_end FROM reconcile_watermarks", second?.period_to)).toEqual([
			{ at_end: 1 },
		]);
	});

	it("a snapshot that dead-letters while its run is running stops its window; the run ends failed, no watermark", async () => {
		const h = h0({ RECONCILE_LOOKBACK_HOURS: "12" });
		const now = Date.now();
		// Window 0 needs a continuation (11 pages); window 1 has one order.
		fake.seed(1_001, () => ({}), "w1", now - 11 * HOUR);
		fake.seed(1, () => ({}), "w1", now - HOUR);
		await post(h, "/admin/reconcile");
		expect(h.reconcile.sent).toHaveLength(2);
		await runJob(h, 0);
		expect(h.reconcile.sent).toHaveLength(3); // window 0's continuation

		await consume(h, [snapshotsSent(h)[0] as QueueMessage], QUEUE_NAMES.eventsDeadLetter);
		expect(await rows("SELECT idx, status FROM reconcile_windows ORDER BY idx")).toEqual([
			{ idx: 0, status: "failed" },
			{ idx: 1, status: "pending" },
		]);

		const [window1, continuation] = [await runJob(h, 1), await runJob(h, 2)];
		expect(window1.fetches).toBe(1);
		expect(continuation.fetches).toBe(0); // a failed window is not paged further
		const [run] = await runs();
		expect(run).toMatchObject({ status: "failed", windows_done: 1, windows_failed: 1 });
		expect(run?.finished_at).not.toBeNull();
		expect(await rows("SELECT * FROM reconcile_watermarks")).toEqual([]);
	});

	it("a dead-lettered snapshot sent before messages named their window still fails its run and puts the watermark back", async () => {
		const h = h0();
		fake.seed(1);
		await post(h, "/admin/reconcile");
		await runJobs(h);
		const [run] = await runs();
		expect(run).toMatchObject({ status: "done" });
		const { window: _, ...old } = snapshotsSent(h)[0] as SnapshotMessage;
		await consume(h, [old], QUEUE_NAMES.eventsDeadLetter);
		expect((await runs())[0]).toMatchObject({ status: "failed", windows_done: 1, windows_failed: 0 });
		expect((await runErrors()).join("\n")).toContain(`w1: snapshot ${old.resource.id} dead-lettered`);
		expect(await rows("SELECT completed_to FROM reconcile_watermarks")).toEqual([{ completed_to: run?.period_from }]);
	});

	it("a dead-lettered reconcile job fails its window and run", async () => {
		const h = h0();
		fake.seed(1);
		await post(h, "/admin/reconcile");
		const job = h.reconcile.sent[0] as ReconcileJob;
		const batch = createMessageBatch<ReconcileJob>(QUEUE_NAMES.reconcileDeadLetter, [
			{ id: "dead-1", timestamp: new Date(), attempts: 1, body: job },
		]);
		const ctx = createExecutionContext();
		await worker.queue(batch, h.env, ctx);
		const result = await getQueueResult(batch, ctx);
		expect(result.retryBatch.retry).toBe(false);
		expect(result.ackAll || result.explicitAcks.includes("dead-1")).toBe(true);

		const [w] = await rows<{ status: string; last_error: string }>("SELECT status, last_error FROM reconcile_windows");
		expect(w?.status).toBe("failed");
		expect(w?.last_error).toContain("retries exhausted");
		const [run] = await runs();
		expect(run).toMatchObject({ status: "failed", windows_failed: 1, windows_done: 0 });
		expect(run?.finished_at).not.toBeNull();
		expect((await runErrors()).join("\n")).toContain("w1#0: reconcile job retries exhausted");
		// A late duplicate of the job changes nothing.
		await runJobs(h);
		expect(fake.requests).toHaveLength(0);
	});
});

describe("rate limiting is bounded", () => {
	it("Retry-After 0 does not loop: 3 requests, then the job is re-queued with a backoff", async () => {
		const h = h0();
		fake.seed(1);
		fake.script(
			...Array.from({ length: 40 }, () => () => new Response(null, { status: 429, headers: { "retry-after": "0" } })),
		);
		await post(h, "/admin/reconcile");
		const first = await runJob(h, 0);
		expect(first.fetches).toBe(MAX_ATTEMPTS);
		expect(h.reconcile.sent).toHaveLength(2);
		expect(h.reconcile.delays[1]).toBeGreaterThanOrEqual(1);
		expect(await rows("SELECT retries, status FROM reconcile_windows")).toEqual([{ retries: 1, status: "pending" }]);
	});

	it("a rate-limited answer every time fails the window after a bounded number of invocations", async () => {
		const h = h0();
		fake.seed(1);
		fake.script(
			...Array.from(
				{ length: 300 },
				() => () => new Response(null, { status: 429, headers: { "retry-after": "600" } }),
			),
		);
		await post(h, "/admin/reconcile");
		const invocations = await runJobs(h);
		expect(invocations).toHaveLength(MAX_RETRIES + 1);
		expect(fake.requests).toHaveLength(MAX_RETRIES + 1);
		expect(await rows("SELECT status FROM reconcile_windows")).toEqual([{ status: "failed" }]);
		expect((await runs())[0]).toMatchObject({ status: "failed" });
		expect((await runErrors()).join("\n")).toContain("rate limited");
	});

	it("a huge Retry-After re-queues the job with at most 12 hours", async () => {
		const h = h0();
		fake.seed(1);
		fake.script(() => new Response(null, { status: 429, headers: { "retry-after": "99999999" } }));
		await post(h, "/admin/reconcile");
		const first = await runJob(h, 0);
		expect(first.fetches).toBe(1);
		expect(h.reconcile.delays[1]).toBe(MAX_RETRY_AFTER_SECONDS);
		expect(MAX_RETRY_AFTER_SECONDS).toBe(12 * 60 * 60);
	});

	it.each([
		["missing", null, 1],
		["zero", "0", 1],
		["negative", "-5", 1],
		["not a number", "soon", 1],
		["fractional", "2.2", 3],
		["huge", "99999999", 43_200],
	])("Retry-After %s becomes a clamped backoff, each answer counted as an attempt", async (_, header, seconds) => {
		const parsed = parseReconcileConfig({ ...RECONCILE_VARS } as never);
		if (!parsed.ok) throw new Error(parsed.error);
		const slept: number[] = [];
		const deps: ClientDeps = {
			fetch: fake.fetch,
			now: Date.now,
			sleep: async (ms) => {
				slept.push(ms);
			},
			random: () => 0.5,
			timeoutMs: 1_000,
		};
		fake.seed(1);
		fake.script(
			...Array.from(
				{ length: 5 },
				() => () => new Response(null, { status: 429, headers: header === null ? {} : { "retry-after": header } }),
			),
		);
		const res = await new ApiClient(parsed.config, deps).listPage("w1", {
			filter: "updatedAt>=2000-01-01T00:00:00Z AND updatedAt<2100-01-01T00:00:00Z",
			orderBy: "updatedAt asc",
			pageToken: null,
		});
		expect(res).toMatchObject({ ok: false, error: { kind: "rate_limited", retryAfterSeconds: seconds } });
		const inline = seconds * 1000 <= MAX_INLINE_RETRY_AFTER_MS;
		expect(fake.requests).toHaveLength(inline ? MAX_ATTEMPTS : 1);
		expect(slept).toEqual(inline ? [seconds * 1000, seconds * 1000] : []);
	});
});

describe("provider answers are untrusted input", () => {
	it("a response body over the byte cap is refused without being read whole; the window fails", async () => {
		const h = h0();
		fake.seed(1);
		const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
		const total = 2 * MAX_RESPONSE_BYTES;
		let pulled = 0;
		// Valid JSON of twice the cap, with no Content-Length: only counting while reading can stop it.
		const stream = () =>
			new ReadableStream<Uint8Array>({
				start(c) {
					c.enqueue(new TextEncoder().encode('{"items":[],"nextPageToken":null,"pad":"'));
				},
				pull(c) {
					if (pulled >= total) {
						c.enqueue(new TextEncoder().encode('"}'));
						c.close();
						return;
					}
					pulled += chunk.length;
					c.enqueue(chunk);
				},
			});
		fake.script(() => new Response(stream(), { headers: { "content-type": "application/json" } }));
		await post(h, "/admin/reconcile");
		await runJobs(h);
		expect(pulled).toBeLessThanOrEqual(MAX_RESPONSE_BYTES + 2 * chunk.length);
		expect((await runs())[0]).toMatchObject({ status: "failed", windows_failed: 1 });
		expect((await runErrors()).join("\n")).toContain(`response larger than ${MAX_RESPONSE_BYTES} bytes`);
	});

	it("a declared Content-Length over the cap is refused before the body is read", async () => {
		const h = h0();
		fake.seed(1);
		let read = false;
		// highWaterMark 0: pull runs only when someone reads.
		const body = new ReadableStream<Uint8Array>(
			{
				pull(c) {
					read = true;
					c.close();
				},
			},
			{ highWaterMark: 0 },
		);
		fake.script(() => new Response(body, { headers: { "content-length": String(MAX_RESPONSE_BYTES + 1) } }));
		await post(h, "/admin/reconcile");
		await runJobs(h);
		expect(read).toBe(false);
		expect((await runs())[0]).toMatchObject({ status: "failed" });
	});

	it("a page with more items than page_size is refused; nothing of it is sent", async () => {
		const h = h0();
		const orders = fake.seed(PAGE_SIZE + 1);
		fake.script(() => Response.json({ items: orders, nextPageToken: null }));
		await post(h, "/admin/reconcile");
		await runJobs(h);
		expect(snapshotsSent(h)).toHaveLength(0);
		expect((await runs())[0]).toMatchObject({ status: "failed", windows_failed: 1, orders_seen: 0 });
		expect((await runErrors()).join("\n")).toContain(`${PAGE_SIZE + 1} items where ${PAGE_SIZE} were asked`);
	});

	it("items of another wallet are dropped and reported in the run", async () => {
		const h = h0();
		const mine = fake.seed(2, () => ({}), "w1");
		const [theirs] = fake.seed(1, () => ({ id: "ord_w1_0" }), "w2");
		fake.script(() => Response.json({ items: [...mine, theirs], nextPageToken: null }));
		await post(h, "/admin/reconcile");
		await runJobs(h);
		expect(snapshotsSent(h).map((m) => [m.resource.wallet, m.resource.id])).toEqual(mine.map((o) => ["w1", o.id]));
		expect((await runs())[0]).toMatchObject({ status: "done", repaired: 2 });
		expect((await runErrors()).join("\n")).toContain("w1#0: dropped 1 item(s) of another wallet (ord_w1_0 of w2)");
	});

	it("a snapshot too large for a queue message is skipped and reported; the rest are sent", async () => {
		const h = h0();
		const [big] = fake.seed(1, () => ({ metadata: { note: "x".repeat(130_000) } }));
		const [small] = fake.seed(1);
		await post(h, "/admin/reconcile");
		await runJobs(h);
		expect(snapshotsSent(h).map((m) => m.resource.id)).toEqual([small?.id]);
		expect((await runs())[0]).toMatchObject({ status: "done", repaired: 1 });
		expect((await runErrors()).join("\n")).toMatch(
			new RegExp(`w1#0: snapshot ${big?.id} too large for a queue message \\(\\d+ bytes\\), skipped`),
		);
	});

	it("a snapshot's size counts two bytes a character once its text holds one above U+00FF", () => {
		const order = { id: "ord_1", wallet: "w1", ordVersion: 1, status: "SUCCESS", metadata: `${"a".repeat(70_000)}€` };
		const snapshot = blooBankOrderSnapshot(order, "w1");
		if (!snapshot) throw new Error("not an order");
		const message: SnapshotMessage = { kind: "snapshot", provider: "bloobank", resource: snapshot, runId: "r" };
		// About 70,000 characters and UTF-8 bytes, but a two-byte string on the queue: 140,000 bytes.
		const json = JSON.stringify(message);
		expect(json.length).toBeLessThan(MAX_SNAPSHOT_MESSAGE_BYTES);
		expect(new TextEncoder().encode(json).byteLength).toBeLessThan(MAX_SNAPSHOT_MESSAGE_BYTES);
		expect(messageBytes(message)).toBeGreaterThan(MAX_SNAPSHOT_MESSAGE_BYTES);
	});
});
