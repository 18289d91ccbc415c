import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getConfig } from "../../src/env";
import { forgetLoggedRejections } from "../../src/notify";
import { runAlerts } from "../../src/sweep/alerts";
import { ALERT_URL, type AlertTarget, captureLogs, fakeAlertTarget } from "../support/alert-target";
import { consume, ingest } from "../support/apply";
import { harness, resetDb, rows } from "../support/worker";

beforeEach(resetDb);

const deadLetter = () =>
	env.DB.prepare(
		"INSERT INTO deliveries (provider, message_id, event, status, body_bytes, received_at, status_at) VALUES ('bloobank', 'dl', 'e', 'failed', 1, 1, 1)",
	).run();

describe("alerts that chat tools accept", () => {
	let target: AlertTarget;
	beforeEach(() => {
		forgetLoggedRejections();
		target = fakeAlertTarget();
	});
	afterEach(() => target.restore());

	it("an operational alert carries text (Slack) and content (Discord), one line, beside its structured fields", async () => {
		const h = harness({ ALERT_WEBHOOK_URL: ALERT_URL });
		await deadLetter();
		const now = Date.parse("2026-11-30T12:00:00Z");
		expect((await runAlerts(h.env, getConfig(h.env), now)).map((t) => t.name)).toEqual(["dead_letters"]);
		expect(target.payloads).toHaveLength(1);
		const p = target.payloads[0] ?? {};
		expect(p).toMatchObject({
			alert: "dead_letters",
			state: "firing",
			detail: "1 deliveries failed (dead-lettered)",
			at: "2026-11-30T12:00:00.000Z",
		});
		expect(p.text).toBe("[payment-webhook-receiver] dead_letters firing: 1 deliveries failed (dead-lettered)");
		expect(p.content).toBe(p.text);
	});

	it("a failed-payment alert carries a one-line text and content naming the order, and no secret", async () => {
		const h = harness({ ALERT_WEBHOOK_URL: ALERT_URL });
		await consume(h, [
			await ingest(h, "pf-1", { id: "ord_9", ordVersion: 5, status: "FAILED", amount: 1250, wallet: "w2" }),
		]);
		expect(await rows("SELECT kind, status FROM effects")).toEqual([{ kind: "payment_failed", status: "done" }]);
		const p = target.payloads[0] ?? {};
		expect(p.alert).toBe("payment_failed");
		expect(p.text).toBe(
			"[payment-webhook-receiver] payment failed: bloobank payment_order ord_9 (wallet w2) v5, 1250 BRL",
		);
		expect(p.content).toBe(p.text);
		const text = JSON.stringify(p);
		for (const secret of [ALERT_URL, "alert-url-secret-token", env.BLOOBANK_WEBHOOK_SECRETS]) {
			expect(text).not.toContain(secret);
		}
	});

	it("a 4xx from the alert target is not delivered, is retried next tick, and is logged once with its status and a truncated reason", async () => {
		const h = harness({ ALERT_WEBHOOK_URL: ALERT_URL });
		const config = getConfig(h.env);
		await deadLetter();
		target.answer = { status: 400, body: `invalid_payload\n${"x".repeat(5_000)}` };
		const logs = captureLogs();
		try {
			const t0 = Date.now();
			for (let tick = 0; tick < 3; tick++) expect(await runAlerts(h.env, config, t0 + tick * 60_000)).toEqual([]);
			expect(await rows("SELECT name FROM alert_state WHERE firing = 1")).toEqual([]);
			const rejected = logs.lines.filter((l) => l.msg === "alert_rejected");
			expect(rejected).toHaveLength(1);
			expect(rejected[0]).toMatchObject({ alert: "dead_letters", status: 400 });
			const reason = String(rejected[0]?.reason);
			expect(reason.startsWith("invalid_payload x")).toBe(true);
			expect(reason.length).toBeLessThanOrEqual(200);
			expect(logs.lines.filter((l) => l.msg === "alert_not_delivered")).toEqual([]);
			expect(logs.raw.join("\n")).not.toContain("alert-url-secret-token");

			target.answer = null;
			expect((await runAlerts(h.env, config, t0 + 180_000)).map((t) => t.name)).toEqual(["dead_letters"]);
			expect(target.payloads).toHaveLength(4);
		} finally {
			logs.restore();
		}
	});

	it("a 5xx from the alert target is still logged on every tick (the incident is retried)", async () => {
		const h = harness({ ALERT_WEBHOOK_URL: ALERT_URL });
		await deadLetter();
		target.answer = { status: 503, body: "upstream down" };
		const logs = captureLogs();
		try {
			for (let tick = 0; tick < 2; tick++) expect(await runAlerts(h.env, getConfig(h.env), Date.now())).toEqual([]);
			expect(logs.lines.filter((l) => l.msg === "alert_not_delivered")).toHaveLength(2);
			expect(logs.lines.filter((l) => l.msg === "alert_rejected")).toEqual([]);
		} finally {
			logs.restore();
		}
	});
});
