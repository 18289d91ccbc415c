/**
 * BlooBank (PROVIDERS.md section 1).
 *
 * Signature (1.2): `X-Bloobank-Signature: t=<ms>,v1=<hex>[,v1=<hex>...][,v2=...]`, HMAC-SHA256
 * over the UTF-8 bytes of `{timestamp}.{rawBody}`, tolerance +-SIGNATURE_TOLERANCE_SECONDS.
 * Envelope (1.3): newer `{event,messageId,deliveryAttempt,occurredAt?,data}` or older
 * `{event,messageId,method,pathname,body,query}`; the resource is `data ?? body`.
 */
import { base64ToBytes, concatBytes, utf8 } from "../crypto/encoding";
import { verifyAnyHmacSha256 } from "../crypto/hmac";
import type { Config } from "../env";
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
	type ResourceSnapshot,
	type VerifyInput,
	type VerifyResult,
} from "./types";

/** Decision (PROVIDERS 1.2): the key is the secret's UTF-8 bytes unless BLOOBANK_SECRET_ENCODING=base64. */
export function bloobankKeyBytes(secret: string, encoding: Config["bloobankSecretEncoding"]): Uint8Array | null {
	return encoding === "base64" ? base64ToBytes(secret) : utf8(secret);
}

export async function verifyBlooBank({ headers, body, secrets, nowMs, config }: VerifyInput): Promise<VerifyResult> {
	const header = headers.get("x-bloobank-signature");
	if (header === null || header.trim() === "") return { ok: false, reason: "missing_signature" };
	const parsed = parseTimestampedHeader(header);
	if (parsed === "malformed_signature") return { ok: false, reason: parsed };

	// Decision (PROVIDERS 1.2): t= and the header must agree when both are present.
	const tsHeader = headers.get("x-bloobank-timestamp")?.trim() ?? null;
	if (parsed.t !== null && tsHeader !== null && parsed.t !== tsHeader)
		return { ok: false, reason: "timestamp_mismatch" };
	const timestamp = parsed.t ?? tsHeader;
	if (timestamp === null || timestamp === "") return { ok: false, reason: "missing_timestamp" };
	const stale = checkTimestamp(timestamp, 1, nowMs, config.toleranceSeconds);
	if (stale) return { ok: false, reason: stale };
	if (parsed.v1.length === 0) return { ok: false, reason: "no_supported_signature" };

	const keys: Uint8Array[] = [];
	for (const secret of secrets) {
		const key = bloobankKeyBytes(secret, config.bloobankSecretEncoding);
		if (key && key.byteLength > 0) keys.push(key);
	}
	// The timestamp string is signed exactly as sent, then the raw body bytes, never re-encoded.
	const signed = concatBytes(utf8(`${timestamp}.`), body);
	return (await verifyAnyHmacSha256(keys, signed, parsed.v1))
		? { ok: true }
		: { ok: false, reason: "signature_mismatch" };
}

/** PROVIDERS 1.3: older lowercase statuses map onto the newer enum. */
export function normaliseBlooBankStatus(status: string): string {
	const s = status.trim().toLowerCase();
	if (s === "confirmed") return "SUCCESS";
	if (s === "canceled" || s === "cancelled") return "CANCELED";
	return s.toUpperCase();
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

	const id = idString(resource.id);
	if (id === null) return "malformed";
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

/** A PaymentOrder as the list API returns it (newer generation), as a snapshot, or null. */
export function blooBankOrderSnapshot(item: unknown): ResourceSnapshot | null {
	const r = paymentOrder("payment_order.listed", item);
	return r === "malformed" ? null : r;
}

export function parseBlooBank(body: string, headers: Headers): ParseResult {
	const envelope = parseObject(body);
	if (typeof envelope === "string") return { ok: false, reason: envelope };
	const messageId = idString(envelope.messageId);
	if (messageId === null) return { ok: false, reason: "missing_message_id" };
	const event = typeof envelope.event === "string" ? envelope.event : "";
	const resource = paymentOrder(event, envelope.data ?? envelope.body);
	if (resource === "malformed") return { ok: false, reason: "malformed_resource" };
	const attempt =
		positiveIntOrNull(envelope.deliveryAttempt) ?? positiveIntOrNull(headers.get("x-bloobank-delivery-attempt"));
	if (resource === null)
		return { ok: true, event: ignoredEvent("bloobank", messageId, event, "event not modelled", { attempt }) };
	return {
		ok: true,
		event: { provider: "bloobank", messageId, event, attempt, attemptRef: null, dedupeKey: null, resource, note: null },
	};
}

export const bloobank: Provider = {
	name: "bloobank",
	keptHeaders: ["x-bloobank-delivery-attempt"],
	verify: verifyBlooBank,
	parse: parseBlooBank,
};
