import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { REJECTION_FLUSH_MS, REJECTION_SAMPLES_PER_MINUTE, rejectionFlush } from "../../src/ingress/rejections";
import { orderEvent, signedRequest } from "../support/bloobank";
import { type Harness, harness, resetDb, rows } from "../support/worker";

beforeEach(resetDb);

const order = (n: number) => orderEvent(`flood-${n}`, { id: `o-${n}`, ordVersion: 1, status: "PENDING" });

/** Four kinds of junk an unauthenticated client can send without knowing any secret. */
async function junk(i: number): Promise<Request> {
	switch (i % 4) {
		case 0: // a random provider name: every name used to get its own counter row per minute
			return new Request(`https://receiver.test/webhooks/x${crypto.randomUUID().slice(0, 8)}`, {
				method: "POST",
				body: "junk",
			});
		case 1: // unsigned
			return new Request("https://receiver.test/webhooks/bloobank", { method: "POST", body: "junk" });
		case 2: // a bad BlooBank signature
			return signedRequest(order(i), { secret: "not-the-secret" });
		default: // a bad Standard Webhooks signature
			return new Request("https://receiver.test/webhooks/standard", {
				method: "POST",
				headers: {
					"webhook-id": `msg_${i}`,
					"webhook-timestamp": String(Math.floor(Date.now() / 1000)),
					"webhook-signature": "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
				},
				body: "{}",
			});
	}
}

/**
 * As workerd does: each answer goes out before its waitUntil work ends. The requests' deferred
 * work is awaited only at the end, so the isolate's rejection buffer sees the flood as it comes.
 */
async function flood(h: Harness, n: number, concurrency = 50): Promise<Map<number, number>> {
	const statuses = new Map<number, number>();
	const pending: ExecutionContext[] = [];
	for (let i = 0; i < n; i += concurrency) {
		await Promise.all(
			Array.from({ length: Math.min(concurrency, n - i) }, async (_, k) => {
				const ctx = createExecutionContext();
				const res = await worker.fetch(await junk(i + k), h.env, ctx);
				statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
				pending.push(ctx);
			}),
		);
	}
	// One at a time: workerd caps active timers per isolate.
	for (const ctx of pending) await waitOnExecutionContext(ctx);
	return statuses;
}

describe("a flood of junk costs no D1 write per request (docs/design.md invariant 8)", () => {
	it("10,000 junk requests (random provider names, unsigned, bad signatures) cause fewer than 50 D1 writes", async () => {
		rejectionFlush.intervalMs = REJECTION_FLUSH_MS;
		try {
			const h = harness();
			const firstMinute = Math.floor(Date.now() / 60_000);
			const statuses = await flood(h, 10_000);
			const minutes = Math.floor(Date.now() / 60_000) - firstMinute + 1;

			expect(Object.fromEntries(statuses)).toEqual({ 401: 7_500, 404: 2_500 });
			expect(h.db.roundTrips).toBeLessThan(50);
			expect(h.db.statementCount).toBeLessThan(50 * 3);

			// Every rejection is still counted, and random names share one bucket.
			const counts = await rows<{ provider: string; reason: string; n: number }>(
				"SELECT provider, reason, sum(count) AS n FROM rejection_counts GROUP BY provider, reason ORDER BY provider, reason",
			);
			expect(counts).toEqual([
				{ provider: "(unknown)", reason: "unknown_provider", n: 2_500 },
				{ provider: "bloobank", reason: "missing_signature", n: 2_500 },
				{ provider: "bloobank", reason: "signature_mismatch", n: 2_500 },
				{ provider: "standard", reason: "signature_mismatch", n: 2_500 },
			]);
			// The log keeps a bounded sample: at most N per reason and minute.
			const sampled = await rows<{ reason: string; n: number }>(
				"SELECT reason, count(*) AS n FROM rejections GROUP BY reason ORDER BY reason",
			);
			expect(sampled.map((s) => s.reason)).toEqual(["missing_signature", "signature_mismatch", "unknown_provider"]);
			for (const s of sampled) expect(s.n).toBeLessThanOrEqual(REJECTION_SAMPLES_PER_MINUTE * minutes);
		} finally {
			rejectionFlush.intervalMs = 0;
		}
	}, 120_000);
});
