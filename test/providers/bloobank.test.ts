import { describe, expect, it } from "vitest";
import type { Env } from "../../src/bindings";
import { parseWebhookConfig, type WebhookConfig } from "../../src/env";
import { blooBankKey, normaliseBlooBankStatus, parseBlooBank, verifyBlooBank } from "../../src/providers/bloobank";
import { hmacHex, OLD_SECRET, SECRET } from "../support/bloobank";

const config: WebhookConfig = parseWebhookConfig({ SIGNATURE_TOLERANCE_SECONDS: "300" } as never);
const enc = new TextEncoder();

// Known-answer vector computed outside the code under test, with node:crypto:
//   createHmac("sha256", KAT_SECRET).update(`${KAT_TS}.${KAT_BODY}`).digest("hex")
const KAT_SECRET = "whsec-test-current-0123456789abcdef0123456789abcdef";
const KAT_TS = "1736553600123";
const KAT_BODY =
	'{"event":"payment_order.success","messageId":"msg_kat_1","deliveryAttempt":1,"data":{"id":"ord_kat_1","wallet":"w1","ordVersion":3,"status":"SUCCESS","amount":12345,"currency":"BRL","direction":"IN"}}';
const KAT_SIG = "abcfdc357b3e5e6a9bc908b97fd5559e01cab30c79bb917a5fd154651b067434";
// The same body and timestamp with BLOOBANK_SECRET_ENCODING=base64: the key is the decoded bytes
// of KAT_B64_SECRET ("0123456789abcdef0123456789abcdef").
const KAT_B64_SECRET = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const KAT_B64_SIG = "b81bf3130e0e0ad3ad3cfc836370061ebdaa32f162cd5aef1013e0cb44308844";

function verify(
	headers: Record<string, string>,
	body: string | Uint8Array = KAT_BODY,
	opts: { secrets?: string[]; nowMs?: number; encoding?: "utf8" | "base64"; config?: WebhookConfig } = {},
) {
	return verifyBlooBank({
		headers: new Headers(headers),
		body: typeof body === "string" ? enc.encode(body) : body,
		keys: (opts.secrets ?? [KAT_SECRET]).map(
			(s) => blooBankKey(s, { BLOOBANK_SECRET_ENCODING: opts.encoding ?? "utf8" } as Env) as Uint8Array,
		),
		nowMs: opts.nowMs ?? Number(KAT_TS),
		config: opts.config ?? config,
	});
}

const katHeaders = { "x-bloobank-timestamp": KAT_TS, "x-bloobank-signature": `t=${KAT_TS},v1=${KAT_SIG}` };

describe("BlooBank signature (docs/providers.md 1.2)", () => {
	it("accepts the known-answer vector", async () => {
		expect(await verify(katHeaders)).toEqual({ ok: true });
		// The tests' own signer agrees with node:crypto, so the other tests sign correctly.
		expect(await hmacHex(KAT_SECRET, `${KAT_TS}.${KAT_BODY}`)).toBe(KAT_SIG);
	});

	it("uses the decoded secret with BLOOBANK_SECRET_ENCODING=base64, and only then", async () => {
		const headers = { "x-bloobank-timestamp": KAT_TS, "x-bloobank-signature": `t=${KAT_TS},v1=${KAT_B64_SIG}` };
		expect(await verify(headers, KAT_BODY, { secrets: [KAT_B64_SECRET], encoding: "base64" })).toEqual({ ok: true });
		expect(await verify(headers, KAT_BODY, { secrets: [KAT_B64_SECRET] })).toEqual({
			ok: false,
			reason: "signature_mismatch",
		});
	});

	it("accepts any configured secret (rotation)", async () => {
		const sig = await hmacHex(OLD_SECRET, `${KAT_TS}.${KAT_BODY}`);
		const headers = { "x-bloobank-timestamp": KAT_TS, "x-bloobank-signature": `t=${KAT_TS},v1=${sig}` };
		expect(await verify(headers, KAT_BODY, { secrets: [SECRET, OLD_SECRET] })).toEqual({ ok: true });
		expect(await verify(headers, KAT_BODY, { secrets: [SECRET] })).toEqual({ ok: false, reason: "signature_mismatch" });
	});

	it("accepts any of several v1 items, skipping malformed ones and unknown versions", async () => {
		const wrong = "0".repeat(64);
		const headers = {
			"x-bloobank-timestamp": KAT_TS,
			"x-bloobank-signature": `t=${KAT_TS},v1=${wrong},v1=nothex,v2=${wrong}, v1=${KAT_SIG}`,
		};
		expect(await verify(headers)).toEqual({ ok: true });
	});

	it("rejects a header with only a version it does not understand", async () => {
		const headers = { "x-bloobank-timestamp": KAT_TS, "x-bloobank-signature": `t=${KAT_TS},v2=${KAT_SIG}` };
		expect(await verify(headers)).toEqual({ ok: false, reason: "no_supported_signature" });
	});

	it.each([
		["just inside, past", 300_000, true],
		["just outside, past", 300_001, false],
		["just inside, future", -300_000, true],
		["just outside, future", -300_001, false],
	])("tolerance %s", async (_name, skewMs, ok) => {
		const result = await verify(katHeaders, KAT_BODY, { nowMs: Number(KAT_TS) + skewMs });
		expect(result).toEqual(ok ? { ok: true } : { ok: false, reason: "timestamp_out_of_tolerance" });
	});

	it("follows SIGNATURE_TOLERANCE_SECONDS", async () => {
		const tight = parseWebhookConfig({ SIGNATURE_TOLERANCE_SECONDS: "10" } as never);
		expect(await verify(katHeaders, KAT_BODY, { nowMs: Number(KAT_TS) + 10_001, config: tight })).toEqual({
			ok: false,
			reason: "timestamp_out_of_tolerance",
		});
	});

	it.each([
		["missing signature header", { "x-bloobank-timestamp": KAT_TS }, "missing_signature"],
		["empty signature header", { "x-bloobank-timestamp": KAT_TS, "x-bloobank-signature": "" }, "missing_signature"],
		["only an item without =", { "x-bloobank-signature": `t=${KAT_TS},${KAT_SIG}` }, "no_supported_signature"],
		["two different t items", { "x-bloobank-signature": `t=${KAT_TS},t=1,v1=${KAT_SIG}` }, "malformed_signature"],
		["no timestamp anywhere", { "x-bloobank-signature": `v1=${KAT_SIG}` }, "missing_timestamp"],
		["non-numeric timestamp", { "x-bloobank-signature": `t=abc,v1=${KAT_SIG}` }, "malformed_timestamp"],
		["seconds-looking timestamp", { "x-bloobank-signature": `t=1736553600.5,v1=${KAT_SIG}` }, "malformed_timestamp"],
		[
			"t= and header disagree",
			{ "x-bloobank-timestamp": "1736553600124", "x-bloobank-signature": `t=${KAT_TS},v1=${KAT_SIG}` },
			"timestamp_mismatch",
		],
	])("rejects %s", async (_name, headers, reason) => {
		expect(await verify(headers)).toEqual({ ok: false, reason });
	});

	it("uses whichever timestamp is present when only one is", async () => {
		expect(await verify({ "x-bloobank-signature": `t=${KAT_TS},v1=${KAT_SIG}` })).toEqual({ ok: true });
		expect(await verify({ "x-bloobank-timestamp": KAT_TS, "x-bloobank-signature": `v1=${KAT_SIG}` })).toEqual({
			ok: true,
		});
	});

	it("rejects one flipped byte of the body, and a re-serialized body", async () => {
		const bytes = enc.encode(KAT_BODY);
		bytes[40] = (bytes[40] as number) ^ 0x01;
		expect(await verify(katHeaders, bytes)).toEqual({ ok: false, reason: "signature_mismatch" });
		const reserialized = JSON.stringify(JSON.parse(KAT_BODY), null, 1);
		expect(await verify(katHeaders, reserialized)).toEqual({ ok: false, reason: "signature_mismatch" });
	});

	it("rejects everything when no secret is usable", async () => {
		expect(await verify(katHeaders, KAT_BODY, { secrets: [] })).toEqual({ ok: false, reason: "signature_mismatch" });
	});
});

describe("BlooBank envelope (docs/providers.md 1.3)", () => {
	it("parses the newer generation", () => {
		const r = parseBlooBank(KAT_BODY, new Headers());
		expect(r).toEqual({
			ok: true,
			event: {
				provider: "bloobank",
				messageId: "msg_kat_1",
				event: "payment_order.success",
				attempt: 1,
				attemptRef: null,
				// The KAT body has neither occurredAt nor data.updatedAt.
				eventAt: null,
				note: null,
				resource: {
					type: "payment_order",
					id: "ord_kat_1",
					wallet: "w1",
					version: 3,
					status: "SUCCESS",
					data: JSON.parse(KAT_BODY).data,
				},
			},
		});
	});

	it("parses the older generation: resource in body, lowercase status, version from updatedAt", () => {
		const body = JSON.stringify({
			event: "payment.confirmed",
			messageId: "old-1",
			method: "POST",
			pathname: "/x",
			query: {},
			body: {
				id: "ord_old",
				status: "confirmed",
				createdAt: "2026-01-01T00:00:00.000Z",
				updatedAt: "2026-01-02T00:00:00.000Z",
			},
		});
		const headers = new Headers({ "x-bloobank-delivery-attempt": "4" });
		const r = parseBlooBank(body, headers);
		expect(r.ok && r.event.resource).toMatchObject({
			id: "ord_old",
			status: "SUCCESS",
			version: Date.parse("2026-01-02T00:00:00.000Z"),
		});
		expect(r.ok && r.event.attempt).toBe(4);
	});

	it("falls back to createdAt for the version", () => {
		const body = JSON.stringify({
			event: "payment.created",
			messageId: "old-2",
			body: { id: "ord_old2", status: "created", createdAt: "2026-01-01T00:00:00.000Z" },
		});
		const r = parseBlooBank(body, new Headers());
		expect(r.ok && r.event.resource?.version).toBe(Date.parse("2026-01-01T00:00:00.000Z"));
	});

	it("applies an order whatever its event name, and ignores events without a modelled resource", () => {
		const renamed = parseBlooBank(
			JSON.stringify({ event: "something.new", messageId: "m", data: { id: "o", ordVersion: 2, status: "PENDING" } }),
			new Headers(),
		);
		expect(renamed.ok && renamed.event.resource?.id).toBe("o");
		const balance = parseBlooBank(
			JSON.stringify({ event: "balance.updated", messageId: "b", data: { wallet: "w1", balance: 5 } }),
			new Headers(),
		);
		expect(balance).toMatchObject({ ok: true, event: { resource: null, event: "balance.updated" } });
	});

	it.each([
		["not JSON", "{nope", "invalid_json"],
		["an array", "[1,2]", "not_an_object"],
		["no messageId", JSON.stringify({ event: "payment_order.success", data: {} }), "missing_message_id"],
		["empty messageId", JSON.stringify({ messageId: " ", event: "x" }), "missing_message_id"],
	])("refuses %s", (_name, body, reason) => {
		expect(parseBlooBank(body, new Headers())).toMatchObject({ ok: false, reason });
	});

	it.each([
		[
			"an order without id",
			JSON.stringify({ messageId: "m", event: "payment_order.success", data: { ordVersion: 1, status: "SUCCESS" } }),
		],
		[
			"an order with a non-integer version",
			JSON.stringify({
				messageId: "m",
				event: "payment_order.success",
				data: { id: "o", ordVersion: 1.5, status: "SUCCESS" },
			}),
		],
		[
			"an order without status",
			JSON.stringify({ messageId: "m", event: "payment_order.success", data: { id: "o", ordVersion: 1 } }),
		],
		[
			"a payment_order event whose data is not an order",
			JSON.stringify({ messageId: "m", event: "payment_order.success", data: "x" }),
		],
	])("stores %s as ignored with a note (signed: never refused)", (_name, body) => {
		expect(parseBlooBank(body, new Headers())).toMatchObject({
			ok: true,
			event: { resource: null, note: "payment order without id, version or status" },
		});
	});

	it.each([
		["confirmed", "SUCCESS"],
		["canceled", "CANCELED"],
		["cancelled", "CANCELED"],
		["processing", "PROCESSING"],
		["SUCCESS", "SUCCESS"],
	])("normalises status %s -> %s", (input, output) => {
		expect(normaliseBlooBankStatus(input)).toBe(output);
	});
});
