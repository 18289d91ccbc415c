/**
 * Pazy (PROVIDERS.md section 3).
 *
 * Decision (signature details are not published): `X-Pazy-Signature: t=<unix seconds>,v1=<hex>`,
 * HMAC-SHA256 over `{t}.{rawBody}`, +-SIGNATURE_TOLERANCE_SECONDS. Envelope
 * `{ id, type, createdAt, data }`; dedupe on `id`, and for `payment.*` a second key
 * `type:paymentId`, so one payment transition re-sent under a new event id is applied once.
 * Ordering: `data.paymentDate` when present (null on failures and reversals), else `createdAt`.
 */
import { concatBytes, utf8 } from "../crypto/encoding";
import { verifyAnyHmacSha256 } from "../crypto/hmac";
import { checkTimestamp, parseTimestampedHeader } from "./signature";
import {
	epochMs,
	idString,
	ignoredEvent,
	isRecord,
	type ParseResult,
	type Provider,
	parseObject,
	positiveIntOrNull,
	type VerifyInput,
	type VerifyResult,
} from "./types";

export async function verifyPazy({ headers, body, secrets, nowMs, config }: VerifyInput): Promise<VerifyResult> {
	const header = headers.get("x-pazy-signature");
	if (header === null || header.trim() === "") return { ok: false, reason: "missing_signature" };
	const parsed = parseTimestampedHeader(header);
	if (parsed === "malformed_signature") return { ok: false, reason: parsed };
	if (parsed.t === null || parsed.t === "") return { ok: false, reason: "missing_timestamp" };
	const stale = checkTimestamp(parsed.t, 1000, nowMs, config.toleranceSeconds);
	if (stale) return { ok: false, reason: stale };
	if (parsed.v1.length === 0) return { ok: false, reason: "no_supported_signature" };
	const keys = secrets.map(utf8).filter((k) => k.byteLength > 0);
	const signed = concatBytes(utf8(`${parsed.t}.`), body);
	return (await verifyAnyHmacSha256(keys, signed, parsed.v1))
		? { ok: true }
		: { ok: false, reason: "signature_mismatch" };
}

export function parsePazy(body: string, headers: Headers): ParseResult {
	const e = parseObject(body);
	if (typeof e === "string") return { ok: false, reason: e };
	const messageId = idString(e.id);
	if (messageId === null) return { ok: false, reason: "missing_message_id" };
	const type = typeof e.type === "string" ? e.type : "";
	const attempt = positiveIntOrNull(headers.get("x-pazy-webhook-attempt"));
	if (!type.startsWith("payment.")) {
		return { ok: true, event: ignoredEvent("pazy", messageId, type, "event not modelled", { attempt }) };
	}
	const data = e.data;
	const paymentId = isRecord(data) ? idString(data.paymentId) : null;
	const version = (isRecord(data) ? epochMs(data.paymentDate) : null) ?? epochMs(e.createdAt);
	if (!isRecord(data) || paymentId === null || version === null) return { ok: false, reason: "malformed_resource" };
	const status =
		typeof data.status === "string" ? data.status.toUpperCase() : type.slice("payment.".length).toUpperCase();
	return {
		ok: true,
		event: {
			provider: "pazy",
			messageId,
			event: type,
			attempt,
			attemptRef: null,
			dedupeKey: `${type}:${paymentId}`,
			note: null,
			resource: { type: "payment", id: paymentId, wallet: null, version, status, data },
		},
	};
}

export const pazy: Provider = {
	name: "pazy",
	keptHeaders: ["x-pazy-webhook-attempt"],
	verify: verifyPazy,
	parse: parsePazy,
};
