import { beforeEach, describe, expect, it } from "vitest";
import { ConfigError, parseWebhookConfig } from "../../src/env";
import { ipAllowed, parseCidr } from "../../src/ingress/cidr";
import { REJECTION_LOG_CAP } from "../../src/ingress/rejections";
import { orderEvent, signedRequest } from "../support/bloobank";
import { call, harness, resetDb, rows } from "../support/worker";

beforeEach(resetDb);

describe("CIDR matching", () => {
	const list = (...cidrs: string[]) =>
		cidrs.map(
			(c) =>
				parseCidr(c) ??
				(() => {
					throw new Error(c);
				})(),
		);

	it.each([
		["203.0.113.7", ["203.0.113.0/24"], true],
		["203.0.114.7", ["203.0.113.0/24"], false],
		["203.0.113.7", ["203.0.113.7/32"], true],
		["203.0.113.8", ["203.0.113.7/32"], false],
		["203.0.113.7", ["203.0.113.7"], true],
		["8.8.8.8", ["0.0.0.0/0"], true],
		["2001:db8::1", ["0.0.0.0/0"], false],
		["2001:db8::1", ["2001:db8::/32"], true],
		["2001:db9::1", ["2001:db8::/32"], false],
		["2001:db8::1", ["2001:db8::1/128"], true],
		["2001:db8::2", ["2001:db8::1/128"], false],
		["2001:0db8:0000:0000:0000:0000:0000:0001", ["2001:db8::1/128"], true],
		["::1", ["::/0"], true],
		["203.0.113.7", ["::/0"], false],
		["::ffff:203.0.113.7", ["::ffff:203.0.113.0/120"], true],
		["not-an-ip", ["0.0.0.0/0"], false],
		["", ["0.0.0.0/0"], false],
	])("%s in %j -> %s", (ip, cidrs, allowed) => {
		expect(ipAllowed(ip, list(...cidrs))).toBe(allowed);
	});

	it.each([
		"10.0.0.0/33",
		"10.0.0/8",
		"10.0.0.256/8",
		"2001:db8::/129",
		"2001:db8:::1/64",
		"1.2.3.4/8/8",
		"010.0.0.0/8",
		"abc",
		"::/x",
	])("refuses %s", (bad) => expect(parseCidr(bad)).toBeNull());

	it("a malformed ALLOWED_SOURCE_CIDRS is a clear configuration error", () => {
		const parse = () => parseWebhookConfig({ ALLOWED_SOURCE_CIDRS: "10.0.0.0/8, 300.1.1.1/8" } as never);
		expect(parse).toThrow(ConfigError);
		expect(parse).toThrow(/300\.1\.1\.1\/8/);
	});
});

describe("source allow-list", () => {
	it("a stale list cannot lose deliveries: 503 outside the list (recorded, retried), 200 inside, 503 without CF-Connecting-IP; IPv4-mapped IPv6 matches IPv4 rules", async () => {
		const h = harness({ ALLOWED_SOURCE_CIDRS: "203.0.113.0/24,2001:db8::/32" });
		const req = async (ip: string | null, n: number) =>
			call(
				h,
				await signedRequest(
					orderEvent(`cidr-${n}`, { id: `o-${n}`, ordVersion: 1, status: "PENDING" }),
					ip ? { headers: { "cf-connecting-ip": ip } } : {},
				),
			);
		const outside = await req("198.51.100.1", 1);
		expect(outside.status).toBe(503);
		expect(outside.headers.get("retry-after")).toBe("10");
		expect((await req(null, 2)).status).toBe(503);
		expect((await req("203.0.113.9", 3)).status).toBe(200);
		expect((await req("2001:db8::42", 4)).status).toBe(200);
		expect((await req("::ffff:203.0.113.10", 5)).status).toBe(200);
		expect((await req("::ffff:cb00:710b", 6)).status).toBe(200);
		expect((await req("::ffff:198.51.100.1", 7)).status).toBe(503);
		expect(await rows("SELECT reason, status, ip FROM rejections ORDER BY seq")).toEqual([
			{ reason: "source_not_allowed", status: 503, ip: "198.51.100.1" },
			{ reason: "source_not_allowed", status: 503, ip: null },
			{ reason: "source_not_allowed", status: 503, ip: "::ffff:198.51.100.1" },
		]);
	});

	it("a malformed list answers 503 (retryable), never 4xx", async () => {
		const h = harness({ ALLOWED_SOURCE_CIDRS: "nonsense" });
		expect(
			(await call(h, await signedRequest(orderEvent("c", { id: "o", ordVersion: 1, status: "PENDING" })))).status,
		).toBe(503);
	});
});

describe("rejection log", () => {
	it(`is a ring: at ${REJECTION_LOG_CAP} rows, each new sample overwrites the oldest`, async () => {
		const h = harness();
		await h.db.inner
			.prepare(
				`WITH RECURSIVE n(s) AS (SELECT 1 UNION ALL SELECT s + 1 FROM n WHERE s < ?1)
         INSERT INTO rejections (id, seq, provider, reason, status, size, ip, at)
         SELECT s % ?1, s, 'bloobank', 'signature_mismatch', 401, 0, NULL, 0 FROM n`,
			)
			.bind(REJECTION_LOG_CAP)
			.run();
		const junk = () =>
			new Request("https://receiver.test/webhooks/bloobank", {
				method: "POST",
				headers: { "x-bloobank-signature": "t=1,v1=00" },
				body: "junk",
			});
		for (let i = 0; i < 3; i++) expect((await call(h, junk())).status).toBe(401);
		expect(await rows("SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi FROM rejections")).toEqual([
			{ n: REJECTION_LOG_CAP, lo: 4, hi: REJECTION_LOG_CAP + 3 },
		]);
		expect(await rows("SELECT sum(count) AS n FROM rejection_counts")).toEqual([{ n: 3 }]);
	});
});

describe("Analytics Engine", () => {
	it("writes one data point per webhook request when the binding is configured", async () => {
		const points: AnalyticsEngineDataPoint[] = [];
		const dataset: AnalyticsEngineDataset = { writeDataPoint: (p) => void points.push(p ?? {}) };
		const h = harness({ WEBHOOK_ANALYTICS: dataset });
		await call(h, await signedRequest(orderEvent("ae-1", { id: "o-ae", ordVersion: 1, status: "PENDING" })));
		await call(h, await signedRequest(orderEvent("ae-1", { id: "o-ae", ordVersion: 1, status: "PENDING" })));
		await call(
			h,
			await signedRequest(orderEvent("ae-2", { id: "o-ae", ordVersion: 2, status: "PENDING" }), { secret: "wrong" }),
		);
		expect(points.map((p) => [p.blobs?.slice(0, 3), p.doubles?.[0]])).toEqual([
			[["bloobank", "accepted", ""], 200],
			[["bloobank", "duplicate", ""], 200],
			[["bloobank", "rejected", "signature_mismatch"], 401],
		]);
		expect(points.every((p) => typeof p.doubles?.[1] === "number" && (p.doubles?.[1] as number) >= 0)).toBe(true);
	});
});
