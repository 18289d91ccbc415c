/**
 * BlooBank (PROVIDERS.md section 1).
 *
 * Signature (1.2): `X-Bloobank-Signature: t=<ms>,v1=<hex>[,v1=<hex>...][,v2=...]`, HMAC-SHA256
 * over the UTF-8 bytes of `{timestamp}.{rawBody}`, tolerance +-SIGNATURE_TOLERANCE_SECONDS.
 * Envelope (1.3): newer `{event,messageId,deliveryAttempt,occurredAt?,data}` or older
 * `{event,messageId,method,pathname,body,query}`; the resource is `data ?? body`.
 */

import { base64ToBytes, concatBytes, hexToBytes, utf8 } from "../crypto/encoding";
import { verifyAnyHmacSha256 } from "../crypto/hmac";
import type { Config } from "../env";
import type { ParseResult, Provider, ResourceSnapshot, VerifyInput, VerifyResult } from "./types";

const MS_DIGITS = /^\d{1,16}$/;
const V1_HEX = /^[0-9a-fA-F]{64}$/;

/** Decision (PROVIDERS 1.2): the key is the secret's UTF-8 bytes unless BLOOBANK_SECRET_ENCODING=base64. */
export function bloobankKeyBytes(secret: string, encoding: Config["bloobankSecretEncoding"]): Uint8Array | null {
	return encoding === "base64" ? base64ToBytes(secret) : utf8(secret);
}

export async function verifyBlooBank({ headers, body, secrets, nowMs, config }: VerifyInput): Promise<VerifyResult> {
	const header = headers.get("x-bloobank-signature");
	if (header === null || header.trim() === "") return { ok: false, reason: "missing_signature" };

	let t: string | null = null;
	const v1: Uint8Array[] = [];
	for (const item of header.split(",")) {
		const eq = item.indexOf("=");
		if (eq <= 0) return { ok: false, reason: "malformed_signature" };
		const key = item.slice(0, eq).trim();
		const value = item.slice(eq + 1).trim();
		if (key === "t") {
			if (t !== null && t !== value) return { ok: false, reason: "malformed_signature" };
			t = value;
		} else if (key === "v1") {
			// A malformed v1 item cannot match; the others may (rotation mixes old and new).
			if (V1_HEX.test(value)) v1.push(hexToBytes(value) as Uint8Array);
		}
		// Other versions (v2=...) are not understood yet and are skipped, not fatal.
	}

	// Decision (PROVIDERS 1.2): t= and the header must agree when both are present.
	const tsHeader = headers.get("x-bloobank-timestamp")?.trim() ?? null;
	if (t !== null && tsHeader !== null && t !== tsHeader) return { ok: false, reason: "timestamp_mismatch" };
	const timestamp = t ?? tsHeader;
	if (timestamp === null || timestamp === "") return { ok: false, reason: "missing_timestamp" };
	if (!MS_DIGITS.test(timestamp)) return { ok: false, reason: "malformed_timestamp" };
	if (Math.abs(nowMs - Number(timestamp)) > config.toleranceSeconds * 1000) {
		return { ok: false, reason: "timestamp_out_of_tolerance" };
	}
	if (v1.length === 0) return { ok: false, reason: "no_supported_signature" };

	const keys: Uint8Array[] = [];
	for (const secret of secrets) {
		const key = bloobankKeyBytes(secret, config.bloobankSecretEncoding);
		if (key && key.byteLength > 0) keys.push(key);
	}
	// The timestamp string is signed exactly as sent, then the raw body bytes, never re-encoded.
	const signed = concatBytes(utf8(`${timestamp}.`), body);
	return (await verifyAnyHmacSha256(keys, signed, v1)) ? { ok: true } : { ok: false, reason: "signature_mismatch" };
}

/** PROVIDERS 1.3: older lowercase statuses map onto the newer enum. */
export function normaliseBlooBankStatus(status: string): string {
	const s = status.trim().toLowerCase();
	if (s === "confirmed") return "SUCCESS";
	if (s === "canceled" || s === "cancelled") return "CANCELED";
	return s.toUpperCase();
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function positiveIntOrNull(value: unknown): number | null {
	if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) return value;
	if (typeof value === "string" && /^\d{1,15}$/.test(value)) {
		const n = Number(value);
		return n > 0 ? n : null;
	}
	return null;
}

function epochMs(value: unknown): number | null {
	if (typeof value !== "string") return null;
	const ms = Date.parse(value);
	return Number.isFinite(ms) ? ms : null;
}

/**
 * A PaymentOrder is recognised by its shape, never by the event name (PROVIDERS 1.3): an `id`
 * and an `ordVersion`, or, for the older generation without `ordVersion`, an event named
 * `payment.*` / `payment_order.*`. Decision: the older generation's version is the epoch ms of
 * `updatedAt`, else `createdAt`.
 */
function paymentOrder(event: string, resource: unknown): ResourceSnapshot | "malformed" | null {
	if (!isRecord(resource)) return event.startsWith("payment") ? "malformed" : null;
	const hasOrdVersion = resource.ordVersion !== undefined && resource.ordVersion !== null;
	const looksLikeOrder = hasOrdVersion || event.startsWith("payment.") || event.startsWith("payment_order.");
	if (!looksLikeOrder) return null;

	const id = resource.id;
	if (typeof id !== "string" || id.trim() === "" || id.length > 200) return "malformed";
	const version = hasOrdVersion
		? positiveIntOrNull(resource.ordVersion)
		: (epochMs(resource.updatedAt) ?? epochMs(resource.createdAt));
	if (version === null) return "malformed";
	if (typeof resource.status !== "string" || resource.status.trim() === "") return "malformed";
	return {
		type: "payment_order",
		id,
		wallet: typeof resource.wallet === "string" ? resource.wallet : null,
		version,
		status: normaliseBlooBankStatus(resource.status),
		data: resource,
	};
}

export function parseBlooBank(body: string, _config: Config, headers?: Headers): ParseResult {
	let envelope: unknown;
	try {
		envelope = JSON.parse(body);
	} catch {
		return { ok: false, reason: "invalid_json" };
	}
	if (!isRecord(envelope)) return { ok: false, reason: "not_an_object" };
	const messageId = envelope.messageId;
	if (typeof messageId !== "string" || messageId.trim() === "" || messageId.length > 200) {
		return { ok: false, reason: "missing_message_id" };
	}
	const event = typeof envelope.event === "string" ? envelope.event : "";
	const resource = paymentOrder(event, envelope.data ?? envelope.body);
	if (resource === "malformed") return { ok: false, reason: "malformed_resource" };
	const attempt =
		positiveIntOrNull(envelope.deliveryAttempt) ?? positiveIntOrNull(headers?.get("x-bloobank-delivery-attempt"));
	return { ok: true, event: { provider: "bloobank", messageId, event, attempt, resource } };
}

export const bloobank: Provider = {
	name: "bloobank",
	verify: verifyBlooBank,
	parse: parseBlooBank,
};
