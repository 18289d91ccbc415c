import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { globalId } from "../../src/db/shards";
import { executeEffects, retryPendingEffects } from "../../src/effects/executor";
import { handlers } from "../../src/effects/handlers";
import { getConfig, getShards } from "../../src/env";
import { runAlerts } from "../../src/sweep/alerts";
import { ALERT_URL, type AlertTarget, fakeAlertTarget } from "../support/alert-target";
import { consume, ingest } from "../support/apply";
import { orderShard } from "../support/bloobank";
import { call, type Harness, harness, resetDb, rows, rowsPerShard } from "../support/worker";

beforeEach(resetDb);

const TOKEN = "admin-test-token-0123456789abcdef0123456789";
const MINUTE = 60_000;

interface EffectState {
	id: number;
	status: string;
	attempts: number;
	last_error: string | null;
	claimed_until: number;
}
/** The one effect, its id as the admin API shows it (naming its shard, src/db/shards.ts). */
const effect = async () =>
	(await rowsPerShard<EffectState>("SELECT id, status, attempts, last_error, claimed_until FROM effects")).flatMap(
		(list, shard) => list.map((e) => ({ ...e, id: globalId(shard, e.id) })),
	)[0];
const totals = () =>
	rows(
		"SELECT currency, sum(count) AS count, sum(amount) AS amount FROM settled_totals GROUP BY currency ORDER BY currency",
	);

function admin(h: Harness, method: string, path: string) {
	return call(
		h,
		new Request(`https://receiver.test${path}`, { method, headers: { authorization: `Bearer ${TOKEN}` } }),
	);
}

/** Runs the sweep's effect step each time the effect's backoff ends, until it stops being pending. */
async function sweepUntilSettled(h: Harness): Promise<number[]> {
	const config = getConfig(h.env);
	const delays: number[] = [];
	for (let tick = 0; tick < 50; tick++) {
		const before = await effect();
		if (before?.status !== "pending") break;
		const report = await retryPendingEffects(h.env, config, before.claimed_until);
		expect(report.done + report.failed).toBe(1);
		const after = await effect();
		if (after?.status === "pending") delays.push((after.claimed_until - before.claimed_until) / MINUTE);
	}
	return delays;
}

/** A merchant's `settled.run` (the billing call of the README's example), switchable off. */
function billing() {
	const state = { down: false, calls: 0 };
	handlers.settled.run = async () => {
		state.calls++;
		if (state.down) throw new Error("billing answered 503");
	};
	return state;
}
afterEach(() => {
	delete handlers.settled.run;
});

describe("effects end", () => {
	let target: AlertTarget;
	beforeEach(() => {
		target = fakeAlertTarget();
	});
	afterEach(() => target.restore());

	it("an effect whose alert target answers 4xx fails 10 times over 1..60 min backoffs, then is failed, never retried again, listed and alerted once", async () => {
		const h = harness({ ALERT_WEBHOOK_URL: ALERT_URL, ADMIN_TOKEN: TOKEN });
		const config = getConfig(h.env);
		target.answer = { status: 403, body: "invalid_token" };
		await consume(h, [await ingest(h, "pf-1", { id: "ord-pf", ordVersion: 2, status: "FAILED" })]);
		expect(await effect()).toMatchObject({ status: "pending", attempts: 1 });

		const delays = await sweepUntilSettled(h);
		// Backoff after attempts 1..9 (minutes): the 10th attempt comes about 4 h after the first.
		expect(delays).toEqual([2, 4, 8, 16, 32, 60, 60, 60]);
		const failed = await effect();
		expect(failed).toMatchObject({ status: "failed", attempts: 10 });
		expect(failed?.last_error).toContain("403");
		expect(target.payloads.filter((p) => p.alert === "payment_failed")).toHaveLength(10);

		// Not retried forever: a day of sweeps later, nothing ran.
		for (const later of [1, 6, 24]) {
			expect(await retryPendingEffects(h.env, config, Date.now() + later * 60 * MINUTE)).toEqual({
				done: 0,
				failed: 0,
			});
		}
		expect(target.payloads.filter((p) => p.alert === "payment_failed")).toHaveLength(10);

		const listed = await (await admin(h, "GET", "/admin/effects?status=failed")).json<{
			items: { id: number; status: string; attempts: number; lastError: string }[];
		}>();
		expect(listed.items).toMatchObject([{ id: failed?.id, status: "failed", attempts: 10 }]);
		expect((await (await admin(h, "GET", "/admin/effects?status=pending")).json<{ items: [] }>()).items).toEqual([]);
		const metrics = await (await admin(h, "GET", "/admin/metrics")).json<{ effects: Record<string, number> }>();
		expect(metrics.effects).toEqual({ pending: 0, failed: 1, done: 0 });

		// The target is fixed: the failed effect raises one alert per incident, cleared by a hand retry.
		target.answer = null;
		const t0 = Date.now();
		expect((await runAlerts(h.env, config, t0)).map((t) => `${t.name}:${t.state}`)).toEqual(["failed_effects:firing"]);
		expect(await runAlerts(h.env, config, t0 + MINUTE)).toEqual([]);
		expect((await admin(h, "POST", `/admin/effects/${failed?.id}/retry`)).status).toBe(202);
		expect(await effect()).toMatchObject({ status: "done", last_error: null });
		expect((await runAlerts(h.env, config, t0 + 2 * MINUTE)).map((t) => `${t.name}:${t.state}`)).toEqual([
			"failed_effects:resolved",
		]);
		expect(target.payloads.filter((p) => p.alert === "failed_effects").map((p) => p.state)).toEqual([
			"firing",
			"resolved",
		]);
	});

	it("a hand retry gives a failed effect a fresh budget; two concurrent retries and a retry after done apply settled totals once", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const bill = billing();
		bill.down = true;
		await consume(h, [await ingest(h, "st-1", { id: "ord-st", ordVersion: 3, status: "SUCCESS", amount: 700 })]);
		await sweepUntilSettled(h);
		const failed = await effect();
		expect(failed).toMatchObject({ status: "failed", attempts: 10, last_error: "billing answered 503" });
		expect(bill.calls).toBe(10);
		expect(await totals()).toEqual([]);

		bill.down = false;
		const answers = await Promise.all([
			admin(h, "POST", `/admin/effects/${failed?.id}/retry`),
			admin(h, "POST", `/admin/effects/${failed?.id}/retry`),
		]);
		expect(answers.map((a) => a.status).sort()).toEqual([202, 409]);
		expect(await effect()).toMatchObject({ status: "done", attempts: 1, last_error: null });
		expect(await totals()).toEqual([{ currency: "BRL", count: 1, amount: 700 }]);

		const again = await admin(h, "POST", `/admin/effects/${failed?.id}/retry`);
		expect(again.status).toBe(409);
		expect(await again.json()).toEqual({ error: "effect is done, not failed" });
		expect(await retryPendingEffects(h.env, getConfig(h.env), Date.now() + 24 * 60 * MINUTE)).toEqual({
			done: 0,
			failed: 0,
		});
		expect(bill.calls).toBe(11);
		expect(await totals()).toEqual([{ currency: "BRL", count: 1, amount: 700 }]);
	});

	it("a hand retry answers 409 for a pending effect, 404 for an unknown or malformed id", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const bill = billing();
		bill.down = true;
		await consume(h, [await ingest(h, "st-2", { id: "ord-st2", ordVersion: 3, status: "SUCCESS" })]);
		const pending = await effect();
		expect(pending?.status).toBe("pending");
		const res = await admin(h, "POST", `/admin/effects/${pending?.id}/retry`);
		expect(res.status).toBe(409);
		expect(await res.json()).toEqual({ error: "effect is pending, not failed" });
		expect((await admin(h, "POST", "/admin/effects/999999/retry")).status).toBe(404);
		expect((await admin(h, "POST", "/admin/effects/abc/retry")).status).toBe(404);
		expect(bill.calls).toBe(1);
	});
});

describe("a crash never loses an effect", () => {
	it("a crash after the effect's run and before its mark-done batch: the sweep completes it once the claim lapses, settled totals applied once", async () => {
		const h = harness();
		const bill = billing();
		const msg = await ingest(h, "crash-1", { id: "ord-crash", ordVersion: 3, status: "SUCCESS", amount: 700 });
		// The consumer's round trips: load bodies, apply batch, then the batch with the effect's
		// writes and its "mark done". Kill that third one, after `run` has been called.
		const markDone = h.db.roundTrips + 3;
		h.db.failRoundTrip = markDone;
		const consumed = await consume(h, [msg]);
		h.db.failRoundTrip = false;
		expect(consumed.explicitAcks).toHaveLength(1);
		expect(h.db.statements[markDone - 1]).toBe("batch(2)");
		expect(bill.calls).toBe(1);
		const stranded = await effect();
		expect(stranded).toMatchObject({ status: "pending", attempts: 0 });
		expect(await totals()).toEqual([]);
		expect(await rows("SELECT status FROM resources")).toEqual([{ status: "SUCCESS" }]);

		const config = getConfig(h.env);
		const claimEnds = stranded?.claimed_until ?? 0;
		// While the dead executor's claim holds, the sweep leaves the effect alone.
		expect(await retryPendingEffects(h.env, config, claimEnds - 1)).toEqual({ done: 0, failed: 0 });
		expect(bill.calls).toBe(1);
		expect(await retryPendingEffects(h.env, config, claimEnds)).toEqual({ done: 1, failed: 0 });
		expect(bill.calls).toBe(2);
		expect(await effect()).toMatchObject({ status: "done", attempts: 1 });
		expect(await totals()).toEqual([{ currency: "BRL", count: 1, amount: 700 }]);

		expect(await retryPendingEffects(h.env, config, claimEnds + 24 * 60 * MINUTE)).toEqual({ done: 0, failed: 0 });
		expect(bill.calls).toBe(2);
		expect(await totals()).toEqual([{ currency: "BRL", count: 1, amount: 700 }]);
	});
});

describe("the effects_done_once guard (migrations 0001, recreated by 0011, which rebuilds effects)", () => {
	it("a second executor holding the same claim after the effect is done commits nothing: settled totals count once", async () => {
		const h = harness();
		await consume(h, [await ingest(h, "twice-1", { id: "ord-twice", ordVersion: 3, status: "SUCCESS", amount: 900 })]);
		expect(await totals()).toEqual([{ currency: "BRL", count: 1, amount: 900 }]);
		const [held] = await rows<{ id: number; kind: string; attempts: number; payload: string }>(
			"SELECT id, kind, attempts, payload FROM effects",
		);
		if (!held) throw new Error("no effect row");
		// The claim an executor took before the first one finished: running it again must hit the trigger.
		const shard = orderShard("ord-twice", getShards(h.env));
		const report = await executeEffects(h.env, getConfig(h.env), shard, [{ ...held, attempts: 0 }], Date.now());
		expect(report).toEqual({ done: 0, failed: 0 });
		expect(await totals()).toEqual([{ currency: "BRL", count: 1, amount: 900 }]);
	});
});
