import {
	createExecutionContext,
	createMessageBatch,
	createScheduledController,
	getQueueResult,
	waitOnExecutionContext,
} from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DAILY_RECONCILE_CRON } from "../../src/cron";
import { parseReconcileConfig } from "../../src/env";
import worker from "../../src/index";
import type { QueueMessage, ReconcileJob } from "../../src/queue/messages";
import { QUEUE_NAMES } from "../../src/queue/messages";
import { BlooBankClient, type ClientDeps, REQUEST_TIMEOUT_MS } from "../../src/reconcile/client";
import { MAX_PAGES_PER_INVOCATION } from "../../src/reconcile/window";
import { consume, ingest } from "../support/apply";
import { ACCESS_KEY, BASE_URL, errorBody, FakeBlooBank, PRIVATE_KEY_HEX } from "../support/fake-bloobank";
import { type Harness, harness, resetDb, rows } from "../support/worker";

const RECONCILE_VARS = {
	BLOOBANK_API_BASE_URL: BASE_URL,
	BLOOBANK_ACCESS_KEY: ACCESS_KEY,
	BLOOBANK_PRIVATE_KEY: PRIVATE_KEY_HEX,
	BLOOBANK_WALLETS: "w1",
	RECONCILE_LOOKBACK_HOURS: "6",
};

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

/** Runs every queued RECONCILE job (continuations included), one invocation each, counting per invocation. */
async function runJobs(h: Harness, from = 0): Promise<InvocationCount[]> {
	const counts: InvocationCount[] = [];
	for (let i = from; i < h.reconcile.sent.length; i++) {
		const job = h.reconcile.sent[i] as ReconcileJob;
		const [d1, fetches, queueCalls] = [h.db.roundTrips, fake.requests.length, h.events.calls + h.reconcile.calls];
		const batch = createMessageBatch<ReconcileJob>(QUEUE_NAMES.reconcile, [
			{ id: `r-${i}`, timestamp: new Date(), attempts: 1, body: job },
		]);
		const ctx = createExecutionContext();
		await worker.queue(batch, h.env, ctx);
		const result = await getQueueResult(batch, ctx);
		expect(result.explicitAcks).toEqual([`r-${i}`]);
		counts.push({
			d1: h.db.roundTrips - d1,
			fetches: fake.requests.length - fetches,
			queueCalls: h.events.calls + h.reconcile.calls - queueCalls,
		});
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
		expect(await rows("SELECT count, amount FROM settled_totals")).toEqual([{ count: 3, amount: 3007 }]);
		const [run] = await runs();
		expect(run).toMatchObject({ id: runId, status: "done", orders_seen: 4, repaired: 2, windows_failed: 0 });

		// A second run finds nothing and fires nothing.
		const sent = h.events.sent.length;
		const jobs = h.reconcile.sent.length;
		await post(h, "/admin/reconcile");
		await runJobs(h, jobs);
		await applySnapshots(h, sent);
		expect((await runs())[1]).toMatchObject({ status: "done", repaired: 0 });
		expect(await rows("SELECT count, amount FROM settled_totals")).toEqual([{ count: 3, amount: 3007 }]);
	});
});

describe("paging", () => {
	it("pages across many pages with continuations, and advances the watermark when done", async () => {
		const h = h0();
		fake.seed(2_450);
		await post(h, "/admin/reconcile");
		const invocations = await runJobs(h);
		// 25 pages, at most MAX_PAGES_PER_INVOCATION per invocation.
		expect(invocations).toHaveLength(Math.ceil(25 / MAX_PAGES_PER_INVOCATION));
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
		const client = new BlooBankClient(parsed.config, deps);
		const res = await client.listPaymentOrders("w1", {
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
