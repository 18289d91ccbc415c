import { beforeEach, describe, expect, it } from "vitest";
import { envelope, expectedResource, signDelivery, simProviders } from "../../scripts/sim/signing";
import { simulate } from "../../scripts/sim/simulate";
import { parseWebhookConfig } from "../../src/env";
import { getProvider, verifyDelivery } from "../../src/providers";
import { simulateLocally } from "../support/simulation";
import { call, harness, resetDb } from "../support/worker";
import { TEST_SECRETS, TEST_VARS } from "../vars";

beforeEach(resetDb);

const state = {
	id: "ord_sim",
	version: 2,
	status: "PROCESSING",
	amount: 10,
	currency: "BRL",
	direction: "IN" as const,
	at: Date.now() - 1000,
};

describe.each(simProviders())("the simulator signs %s deliveries the receiver accepts", (name) => {
	it("verifies and parses to the resource the simulator expects", async () => {
		const provider = getProvider(name);
		if (!provider) throw new Error(name);
		const config = parseWebhookConfig(TEST_VARS as never);
		const body = envelope(name, "sim-msg-1", state);
		const headers = new Headers(await signDelivery(name, TEST_SECRETS[name][0], body, "sim-msg-1", Date.now()));
		const verified = await verifyDelivery(provider, {
			headers,
			body: new TextEncoder().encode(body),
			keys: config.keys[name],
			nowMs: Date.now(),
			config,
		});
		expect(verified).toEqual({ ok: true });
		const parsed = provider.parse(body, headers, config.providerSettings[name]);
		const want = expectedResource(name, state);
		expect(parsed.ok && parsed.event.messageId).toBe("sim-msg-1");
		expect(parsed.ok && parsed.event.resource).toMatchObject({
			type: want.type,
			id: want.id,
			version: want.version,
			status: want.status,
		});
		// And one flipped character is refused.
		const tampered = await verifyDelivery(provider, {
			headers,
			body: new TextEncoder().encode(body.replace("ord_sim", "ord_sin")),
			keys: config.keys[name],
			nowMs: Date.now(),
			config,
		});
		expect(tampered.ok).toBe(false);
	});
});

describe("a short simulation against the local Worker", () => {
	it.each(simProviders())("%s: 50 orders, duplicates, shuffled: zero mismatches", async (name) => {
		const h = harness({ ADMIN_TOKEN: "sim-admin-token-0123456789abcdef0123456789" });
		const report = await simulateLocally(h, {
			provider: name,
			secret: TEST_SECRETS[name][1],
			adminToken: "sim-admin-token-0123456789abcdef0123456789",
			orders: 50,
			concurrency: 8,
			duplicateRate: 0.3,
			seed: 42,
			timeScale: 1000,
		});
		expect(report.verified).toBe(true);
		expect(report.duplicatesSent).toBeGreaterThan(0);
		expect(report.acked).toBe(report.deliveries + report.duplicatesSent);
		expect(report.permanentFailures).toBe(0);
		expect(report.mismatches).toEqual([]);
	});

	it("reports a mismatch when the receiver misses a delivery (the check can fail)", async () => {
		const h = harness({ ADMIN_TOKEN: "sim-admin-token-0123456789abcdef0123456789" });
		const report = await simulate(
			{
				url: "https://receiver.test",
				provider: "bloobank",
				secret: TEST_SECRETS.bloobank[0],
				adminToken: "sim-admin-token-0123456789abcdef0123456789",
				orders: 5,
				concurrency: 2,
				duplicateRate: 0,
				seed: 7,
				timeScale: 1000,
			},
			// Nothing is ever applied: every order must come back as a mismatch.
			{ fetch: (req) => call(h, req), sleep: async () => {}, now: () => Date.now(), settle: async () => {} },
		);
		expect(report.mismatches).toHaveLength(5);
		expect(report.mismatches[0]?.actual).toBeNull();
	});

	it("redelivers on 503 following the schedule, and treats a BlooBank 4xx as permanent", async () => {
		const h = harness({ ADMIN_TOKEN: "sim-admin-token-0123456789abcdef0123456789" });
		let n = 0;
		const sleeps: number[] = [];
		const report = await simulate(
			{
				url: "https://receiver.test",
				provider: "bloobank",
				secret: TEST_SECRETS.bloobank[0],
				adminToken: null,
				orders: 1,
				concurrency: 1,
				duplicateRate: 0,
				seed: 3,
				timeScale: 1,
			},
			{
				fetch: async (req) => {
					n++;
					if (n === 1) return new Response(null, { status: 503 });
					if (n === 3) return new Response(null, { status: 400 });
					return call(h, req);
				},
				sleep: async (ms) => {
					sleeps.push(ms);
				},
				now: () => Date.now(),
				settle: async () => {},
			},
		);
		expect(report.retried).toBe(1);
		expect(report.permanentFailures).toBe(1);
		// BlooBank's second attempt comes ~10 s later, jittered within [0.5x, 1.5x].
		expect(sleeps[0]).toBeGreaterThanOrEqual(5_000);
		expect(sleeps[0]).toBeLessThanOrEqual(15_000);
	});
});
