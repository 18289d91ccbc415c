import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { SWEEP_CRON } from "../../src/cron";
import { D1_LIMIT_BYTES } from "../../src/db/size";
import { getConfig, getShards } from "../../src/env";
import worker from "../../src/index";
import { evaluate, readSignals, runAlerts, type Signals } from "../../src/sweep/alerts";
import { pruneExpired, REJECTION_COUNT_RETENTION_MS, RETENTION_CHUNK } from "../../src/sweep/retention";
import { sweep } from "../../src/sweep/sweep";
import { consume, ingest } from "../support/apply";
import { orderEvent, signedRequest } from "../support/bloobank";
import { call, countRows, harness, resetDb, rows } from "../support/worker";

beforeEach(resetDb);
const DAY = 24 * 60 * 60_000;

describe("retention", () => {
	it("prunes bodies after RETENTION_DAYS, keeps the dedupe key, so a late replay is still a duplicate", async () => {
		const h = harness();
		const raw = JSON.stringify(orderEvent("old-1", { id: "o-old", ordVersion: 1, status: "PENDING" }));
		await consume(h, [await ingest(h, "old-1", { id: "o-old", ordVersion: 1, status: "PENDING" })]);
		const config = getConfig(h.env);
		const report = await pruneExpired(getShards(env), config, Date.now() + 31 * DAY);
		expect(report.bodiesPruned).toBe(1);
		expect(report.deliveriesDeleted).toBe(0);
		expect(await rows("SELECT raw_body, status FROM deliveries")).toEqual([{ raw_body: null, status: "processed" }]);

		// BlooBank's manual replay keeps the messageId: still recognised, still answered 200, nothing sent.
		const sent = h.events.sent.length;
		const replay = await call(h, await signedRequest(raw));
		expect(replay.status).toBe(200);
		expect(h.events.sent.length).toBe(sent);
		expect(await rows("SELECT duplicates FROM deliveries")).toEqual([{ duplicates: 1 }]);

		expect((await pruneExpired(getShards(env), config, Date.now() + 91 * DAY)).deliveriesDeleted).toBe(1);
		expect(await countRows("deliveries")).toBe(0);
	});

	it("never prunes a delivery that is not yet applied, and works in bounded chunks", async () => {
		const h = harness();
		h.events.fail = true;
		await call(h, await signedRequest(orderEvent("stuck-1", { id: "o-stuck", ordVersion: 1, status: "PENDING" })));
		const report = await pruneExpired(getShards(env), getConfig(h.env), Date.now() + 365 * DAY);
		expect(report).toMatchObject({ bodiesPruned: 0, deliveriesDeleted: 0 });
		expect((await rows<{ raw_body: string | null }>("SELECT raw_body FROM deliveries"))[0]?.raw_body).not.toBeNull();
	});
});

describe("retention of rejection records", () => {
	it("prunes old rejection counters and log rows in bounded chunks, never all at once", async () => {
		const now = Date.now();
		const old = Math.floor((now - REJECTION_COUNT_RETENTION_MS) / 60_000) - 10;
		await env.DB.batch([
			env.DB.prepare(
				`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200)
         INSERT INTO rejection_counts (minute, provider, reason, count) SELECT ?1 - i, 'bloobank', 'signature_mismatch', 1 FROM n`,
			).bind(old),
			env.DB.prepare(
				`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 700)
         INSERT INTO rejections (id, seq, provider, reason, status, size, ip, at) SELECT i, i, 'bloobank', 'x', 401, 0, NULL, 0 FROM n`,
			),
		]);
		const config = getConfig(harness().env);
		const first = await pruneExpired(getShards(env), config, now);
		expect(first).toMatchObject({ rejectionCountsDeleted: RETENTION_CHUNK, rejectionsDeleted: RETENTION_CHUNK });
		const second = await pruneExpired(getShards(env), config, now);
		expect(second).toMatchObject({ rejectionCountsDeleted: RETENTION_CHUNK, rejectionsDeleted: 200 });
		expect((await pruneExpired(getShards(env), config, now)).rejectionCountsDeleted).toBe(200);
		expect(await countRows("rejection_counts")).toBe(0);
	});
});

describe("alerts", () => {
	const quiet: Signals = {
		signatureFailuresPerMinute: [0, 0, 0, 0, 0],
		ackP99Ms: 20,
		oldestUnprocessedMs: null,
		failedDeliveries: 0,
		failedEffects: 0,
		lastReconcileRepairs: null,
		misconfigured: {},
		configProblem: null,
		databaseBytes: 1_000_000,
	};
	const now = Date.parse("2026-11-30T12:00:30Z");

	it.each<[string, Partial<Signals>, string | null]>([
		["quiet", {}, null],
		["signature failures in 4 of 5 minutes", { signatureFailuresPerMinute: [1, 1, 0, 1, 1] }, null],
		["signature failures sustained 5 minutes", { signatureFailuresPerMinute: [1, 2, 1, 1, 9] }, "signature_failures"],
		["ack p99 at 3 s", { ackP99Ms: 3000 }, null],
		["ack p99 over 3 s", { ackP99Ms: 3001 }, "ack_latency"],
		["backlog 10 minutes", { oldestUnprocessedMs: now - 600_000 }, null],
		["backlog over 10 minutes", { oldestUnprocessedMs: now - 600_001 }, "backlog"],
		["a dead-lettered delivery", { failedDeliveries: 1 }, "dead_letters"],
		["an effect given up as failed", { failedEffects: 1 }, "failed_effects"],
		["a reconcile run with repairs", { lastReconcileRepairs: { runId: "r", repaired: 2 } }, "reconcile_repairs"],
		["a reconcile run without repairs", { lastReconcileRepairs: { runId: "r", repaired: 0 } }, null],
		["a variable that does not parse", { configProblem: "BOLD_WEBHOOK_SECRETS" }, "config_error"],
		[
			"deliveries to a provider without secrets",
			{ misconfigured: { provider_not_configured: 3 } },
			"provider_not_configured",
		],
		[
			"deliveries from outside ALLOWED_SOURCE_CIDRS",
			{ misconfigured: { source_not_allowed: 1 } },
			"source_not_allowed",
		],
		["the database at 79.9% of D1's limit", { databaseBytes: 0.799 * D1_LIMIT_BYTES }, null],
		["the database at 80% of D1's limit", { databaseBytes: 0.8 * D1_LIMIT_BYTES }, "database_size"],
		["the database size unknown", { databaseBytes: null }, null],
	])("%s", (_name, signals, fires) => {
		const firing = evaluate({ ...quiet, ...signals }, now);
		expect([...firing.keys()]).toEqual(fires === null ? [] : [fires]);
	});

	it("fires once per incident and clears once, posting to ALERT_WEBHOOK_URL", async () => {
		const posted: { alert: string; state: string }[] = [];
		const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
			const req = new Request(input, init);
			posted.push(await req.json());
			return new Response(null, { status: 204 });
		});
		try {
			const h = harness({ ALERT_WEBHOOK_URL: "https://alerts.test/hook" });
			const config = getConfig(h.env);
			const msg = await ingest(h, "dl-1", { id: "o-dl", ordVersion: 1, status: "PENDING" });
			await consume(h, [msg], "webhook-events-dlq");
			const t0 = Date.now();
			expect((await runAlerts(h.env, config, t0)).map((t) => `${t.name}:${t.state}`)).toEqual(["dead_letters:firing"]);
			expect(await runAlerts(h.env, config, t0 + 60_000)).toEqual([]);
			expect(await runAlerts(h.env, config, t0 + 120_000)).toEqual([]);
			await consume(h, [msg]);
			expect((await runAlerts(h.env, config, t0 + 180_000)).map((t) => `${t.name}:${t.state}`)).toEqual([
				"dead_letters:resolved",
			]);
			expect(await runAlerts(h.env, config, t0 + 240_000)).toEqual([]);
			expect(posted.map((p) => `${p.alert}:${p.state}`)).toEqual(["dead_letters:firing", "dead_letters:resolved"]);
		} finally {
			spy.mockRestore();
		}
	});

	it("the sweep reads the database size from D1's own figure (meta.size_after), as the metrics report it", async () => {
		const h = harness({ ADMIN_TOKEN: "scale-admin-token-0123456789abcdef0123456789" });
		await ingest(h, "size-1", { id: "o-size", ordVersion: 1, status: "PENDING" });
		const signals = await readSignals(getShards(h.env), Date.now());
		const probe = await env.DB.prepare("SELECT 1").run();
		expect(signals.databaseBytes).toBe(probe.meta.size_after);
		expect(signals.databaseBytes).toBeGreaterThan(0);
		const report = await sweep(h.env, getConfig(h.env), Date.now());
		expect(report.databaseBytes).toBe(probe.meta.size_after);
	});

	it("signature failures sustained for 5 minutes fire from real rejections", async () => {
		const h = harness();
		const minute = Math.floor(Date.now() / 60_000);
		for (let m = 1; m <= 5; m++) {
			await env.DB.prepare(
				"INSERT INTO rejection_counts (minute, provider, reason, count) VALUES (?1, 'bloobank', 'signature_mismatch', 1)",
			)
				.bind(minute - m)
				.run();
		}
		const fired = await runAlerts(h.env, getConfig(h.env), Date.now());
		expect(fired.map((t) => t.name)).toEqual(["signature_failures"]);
	});

	it("an alert that cannot be delivered is retried on the next tick", async () => {
		let up = false;
		const spy = vi
			.spyOn(globalThis, "fetch")
			.mockImplementation(async () => new Response(null, { status: up ? 200 : 503 }));
		try {
			const h = harness({ ALERT_WEBHOOK_URL: "https://alerts.test/hook" });
			await env.DB.prepare(
				"INSERT INTO deliveries (provider, message_id, event, status, body_bytes, received_at, status_at) VALUES ('bloobank', 'f', 'e', 'failed', 1, 1, 1)",
			).run();
			expect(await runAlerts(h.env, getConfig(h.env), Date.now())).toEqual([]);
			up = true;
			expect((await runAlerts(h.env, getConfig(h.env), Date.now())).map((t) => t.name)).toEqual(["dead_letters"]);
		} finally {
			spy.mockRestore();
		}
	});
});

describe("the sweep cron", () => {
	it("runs on its cron string through the scheduled handler", async () => {
		const h = harness();
		h.events.fail = true;
		await call(h, await signedRequest(orderEvent("cron-1", { id: "o-cron", ordVersion: 1, status: "PENDING" })));
		h.events.fail = false;
		const controller = createScheduledController({ scheduledTime: new Date(Date.now() + 301_000), cron: SWEEP_CRON });
		const ctx = createExecutionContext();
		await worker.scheduled(controller, h.env, ctx);
		await waitOnExecutionContext(ctx);
		expect(h.events.sent).toHaveLength(1);
		expect(await rows("SELECT status FROM deliveries")).toEqual([{ status: "enqueued" }]);
	});
});
