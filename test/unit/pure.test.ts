/** The pure parts, tested without D1 or a Worker: plain inputs, plain outputs. */
import { describe, expect, it } from "vitest";
import { planBatch, retryDelaySeconds } from "../../src/apply/consumer";
import { jsonChunks, sortedKeys } from "../../src/apply/statements";
import { base64ToBytesLenient } from "../../src/crypto/encoding";
import { effectRetryDelayMs } from "../../src/effects/executor";
import { parseConfig } from "../../src/env";
import { ipAllowed, parseCidr } from "../../src/ingress/cidr";
import { effectsFor } from "../../src/providers";
import { blooBankStatusRank, bloobank, paymentOrderEffects } from "../../src/providers/bloobank";
import { bold } from "../../src/providers/bold";
import { checkTimestamp, parseTimestampedHeader } from "../../src/providers/signature";
import { genericStatusRank, type ResourceSnapshot } from "../../src/providers/types";
import type { QueueMessage } from "../../src/queue/messages";
import { MAX_WINDOWS_PER_WALLET, splitWindows, WINDOW_MS } from "../../src/reconcile/planner";
import { backoff, iso } from "../../src/time";

const order = (status: string, extra: Partial<ResourceSnapshot> = {}): ResourceSnapshot => ({
	type: "payment_order",
	id: "ord_1",
	wallet: "w1",
	version: 3,
	status,
	data: { amount: 500, currency: "BRL", direction: "IN" },
	...extra,
});

describe("batch planning", () => {
	const config = parseConfig({} as never);
	const body = (id: string, v: number, status: string) =>
		JSON.stringify({
			event: "payment_order.x",
			messageId: `m-${id}-${v}`,
			data: { id, wallet: "w1", ordVersion: v, status },
		});
	const stored = new Map([
		[
			1,
			{
				id: 1,
				provider: "bloobank",
				message_id: "m1",
				archived_at: null,
				raw_body: body("a", 1, "PENDING"),
				headers: null,
			},
		],
		[2, { id: 2, provider: "bloobank", message_id: "m2", archived_at: null, raw_body: "{not json", headers: null }],
		[
			3,
			{
				id: 3,
				provider: "bloobank",
				message_id: "m3",
				archived_at: null,
				raw_body: JSON.stringify({ event: "balance.updated", messageId: "b" }),
				headers: null,
			},
		],
		[4, { id: 4, provider: "bloobank", message_id: "m4", archived_at: null, raw_body: null, headers: null }],
		[5, { id: 5, provider: "gone", message_id: "m5", archived_at: null, raw_body: "{}", headers: null }],
		[
			6,
			{
				id: 6,
				provider: "bloobank",
				message_id: "m6",
				archived_at: null,
				raw_body: body("a", 2, "SUCCESS"),
				headers: null,
			},
		],
	]);
	const pointer = (deliveryId: number): QueueMessage => ({
		kind: "delivery",
		deliveryId,
		provider: "bloobank",
		messageId: "x",
	});

	it("sorts each message into apply, ignore or fail, and plans effects only for what applies", () => {
		const plan = planBatch([1, 2, 3, 4, 5, 6, 7].map(pointer), stored, config);
		expect(plan.rows.map((r) => [r.ref, r.status, r.rank])).toEqual([
			[1, "PENDING", 0],
			[6, "SUCCESS", 1],
		]);
		expect(plan.ignored).toEqual([3]);
		expect(plan.failed.map((f) => [f.ref, f.error])).toEqual([
			[2, "unparseable: invalid_json"],
			[4, "raw body no longer kept in D1 (RETENTION_DAYS) or the archive"],
			[5, "unknown provider gone"],
		]);
		expect(plan.effects.map((e) => [e.kind, e.wallet, e.version, e.status])).toEqual([["settled", "w1", 2, "SUCCESS"]]);
	});

	it("a reconcile snapshot goes through the same planning, its data with sorted keys", () => {
		const snapshot: QueueMessage = {
			kind: "snapshot",
			provider: "bloobank",
			runId: null,
			resource: order("FAILED", { data: { z: 1, a: { y: 2, b: 3 } } }),
		};
		const plan = planBatch([snapshot], new Map(), config);
		expect(plan.rows).toHaveLength(1);
		expect(JSON.stringify(plan.rows[0]?.data)).toBe('{"a":{"b":3,"y":2},"z":1}');
		expect(plan.effects.map((e) => e.kind)).toEqual(["payment_failed"]);
	});
});

describe("chunking", () => {
	it("never puts more than maxBytes of JSON in a chunk, and never splits a row", () => {
		const rows = Array.from({ length: 10 }, (_, i) => ({ i, pad: "x".repeat(40) }));
		const chunks = jsonChunks(rows, 120);
		for (const c of chunks) expect(c.length).toBeLessThanOrEqual(120);
		expect(chunks.flatMap((c) => JSON.parse(c))).toEqual(rows);
		expect(jsonChunks([{ big: "y".repeat(500) }], 120)).toHaveLength(1);
	});

	it("sortedKeys orders keys at every depth and keeps arrays in order", () => {
		expect(JSON.stringify(sortedKeys({ b: [{ d: 1, c: 2 }], a: null }))).toBe('{"a":null,"b":[{"c":2,"d":1}]}');
	});
});

describe("window splitting", () => {
	it("covers the period exactly with 6-hour windows", () => {
		const w = splitWindows(0, 24 * 3_600_000);
		expect(w.map((x) => [x.fromMs, x.toMs])).toEqual([
			[0, WINDOW_MS],
			[WINDOW_MS, 2 * WINDOW_MS],
			[2 * WINDOW_MS, 3 * WINDOW_MS],
			[3 * WINDOW_MS, 4 * WINDOW_MS],
		]);
		expect(splitWindows(5, 5)).toEqual([]);
	});

	it("a long-stale watermark widens the windows instead of planning more than the cap", () => {
		const year = 365 * 24 * 3_600_000;
		const w = splitWindows(0, year);
		expect(w.length).toBeLessThanOrEqual(MAX_WINDOWS_PER_WALLET);
		expect(w[0]?.fromMs).toBe(0);
		expect(w.at(-1)?.toMs).toBe(year);
		for (let i = 1; i < w.length; i++) expect(w[i]?.fromMs).toBe(w[i - 1]?.toMs);
	});
});

describe("timestamps and signature headers", () => {
	it.each([
		["1000", 1, 1000, 0, null],
		["1000", 1, 1000 + 300_000, 300, null],
		["1000", 1, 1001 + 300_000, 300, "timestamp_out_of_tolerance"],
		["2", 1000, 1000, 1, null],
		["1.5", 1000, 1500, 300, "malformed_timestamp"],
		["-1", 1, 0, 300, "malformed_timestamp"],
		["12345678901234567", 1, 0, 300, "malformed_timestamp"],
	] as const)("%s (unit %i ms) at %i, tolerance %i s -> %s", (value, unit, now, tol, want) => {
		expect(checkTimestamp(value, unit, now, tol)).toBe(want);
	});

	it("considers at most 16 items, skips those without = and unknown versions", () => {
		const v1 = "a".repeat(64);
		expect(parseTimestampedHeader(`t=1,,junk,v2=zz,v1=${v1},`)).toMatchObject({ t: "1", v1: [expect.any(Uint8Array)] });
		const many = Array.from({ length: 40 }, () => `v1=${v1}`).join(",");
		expect((parseTimestampedHeader(`t=1,${many}`) as { v1: unknown[] }).v1).toHaveLength(15);
		expect(parseTimestampedHeader("t=1,t=2")).toBe("malformed_signature");
	});

	it("base64 secrets decode padded, unpadded and URL-safe, and nothing else", () => {
		const want = [251, 255, 191];
		expect([...(base64ToBytesLenient("+/+/") ?? [])]).toEqual(want);
		expect([...(base64ToBytesLenient("-_-_") ?? [])]).toEqual(want);
		expect([...(base64ToBytesLenient("YQ") ?? [])]).toEqual([97]);
		expect([...(base64ToBytesLenient("YQ==") ?? [])]).toEqual([97]);
		expect(base64ToBytesLenient("Y")).toBeNull();
		expect(base64ToBytesLenient("Y Q")).toBeNull();
		expect(base64ToBytesLenient("YQ!")).toBeNull();
	});

	it("IPv4-mapped IPv6 addresses match IPv4 rules", () => {
		const list = [parseCidr("203.0.113.0/24")].filter((c) => c !== null);
		expect(ipAllowed("::ffff:203.0.113.5", list)).toBe(true);
		expect(ipAllowed("::ffff:203.0.114.5", list)).toBe(false);
	});
});

describe("effect rules and status ranks", () => {
	it.each([
		["SUCCESS", ["settled"]],
		["REFUNDED", ["settled"]],
		["FAILED", ["payment_failed"]],
		["EXPIRED", ["hold_released"]],
		["CANCELED", ["hold_released"]],
		["PENDING", []],
		["PROCESSING", []],
	])("a BlooBank order %s implies %j", (status, kinds) => {
		expect(paymentOrderEffects(order(status)).map((e) => e.kind)).toEqual(kinds);
	});

	it("only the provider that declares a rule for a type can fire it", () => {
		expect(effectsFor(bloobank, order("SUCCESS"))).toHaveLength(1);
		expect(effectsFor(bold, order("SUCCESS"))).toEqual([]);
		expect(effectsFor(bloobank, order("SUCCESS", { type: "refund" }))).toEqual([]);
	});

	it("ranks: in flight < final < reversal", () => {
		expect([blooBankStatusRank("PENDING"), blooBankStatusRank("SUCCESS"), blooBankStatusRank("REFUNDED")]).toEqual([
			0, 1, 2,
		]);
		expect([genericStatusRank("OPEN"), genericStatusRank("PAID"), genericStatusRank("REVERSED")]).toEqual([0, 1, 2]);
	});
});

describe("times and delays", () => {
	it("backoff doubles from its base and stops at its cap", () => {
		expect([1, 2, 3, 4, 10].map((n) => backoff(n, 10, 60))).toEqual([10, 20, 40, 60, 60]);
		expect(backoff(0, 10, 60)).toBe(10);
		expect([0, 1, 2, 7].map(retryDelaySeconds)).toEqual([10, 10, 20, 600]);
		expect([1, 2, 7, 8].map(effectRetryDelayMs)).toEqual([60_000, 120_000, 3_600_000, 3_600_000]);
	});

	it("iso writes RFC 3339 UTC and passes null through", () => {
		expect(iso(0)).toBe("1970-01-01T00:00:00.000Z");
		expect(iso(null)).toBeNull();
	});
});

describe("generic status rank", () => {
	it("ranks a status taken from an event name by its last part", () => {
		expect(genericStatusRank("CHARGE.SUCCEEDED")).toBe(1);
		expect(genericStatusRank("REFUND.COMPLETED")).toBe(1);
		expect(genericStatusRank("CHARGE.REFUNDED")).toBe(2);
		expect(genericStatusRank("CHARGE.CREATED")).toBe(0);
	});
});
