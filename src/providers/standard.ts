/**
 * Standard Webhooks (docs/providers.md 4; https://www.standardwebhooks.com).
 *
 * Headers `webhook-id`, `webhook-timestamp` (Unix seconds), `webhook-signature` (space-separated
 * `v1,<base64>`); signed content `{id}.{timestamp}.{rawBody}`; secret `whsec_<base64>`, the key
 * being the decoded part. Dedupe on `webhook-id`.
 */
import { base64ToBytes, base64ToBytesLenient, concatBytes, utf8 } from "../crypto/encoding";
import {
	checkTimestamp,
	MAX_SIGNATURE_ITEMS,
	type SignatureCheck,
	type SignatureInput,
	type VerifyInput,
	verifySigned,
} from "./signature";
import {
	epochMs,
	genericStatusRank,
	idString,
	ignoredEvent,
	isRecord,
	type ParseResult,
	type Provider,
	parseObject,
} from "./types";

declare module "./model" {
	interface ProviderVariables {
		standard: "STANDARD_WEBHOOK_SECRETS";
	}
}

/**
 * How an event maps onto a resource. Edit this for your sender; the default reads the event's
 * `type`, `data.id` and `data.status`, and orders snapshots by the payload's `timestamp` (the
 * spec's recommended envelope `{ type, timestamp, data }`: when the event happened), falling back
 * to `webhook-timestamp`. Decision: the payload time comes first because senders such as Svix sign
 * each retry anew, so the header time of a retried old event can be newer than a later event's.
 */
export const STANDARD_MAPPING = {
	resourceType: (event: Record<string, unknown>) => (typeof event.type === "string" ? event.type.split(".")[0] : null),
	resourceId: (event: Record<string, unknown>) => (isRecord(event.data) ? idString(event.data.id) : null),
	status: (event: Record<string, unknown>) =>
		isRecord(event.data) && typeof event.data.status === "string"
			? event.data.status.toUpperCase()
			: String(event.type ?? "").toUpperCase(),
	/** Epoch ms. */
	version: (event: Record<string, unknown>, headers: Headers) =>
		(typeof event.timestamp === "string" ? Date.parse(event.timestamp) : Number.NaN) ||
		Number(headers.get("webhook-timestamp")) * 1000,
};

export function checkStandardSignature({ headers, nowMs, config }: SignatureInput): SignatureCheck {
	const id = headers.get("webhook-id");
	const timestamp = headers.get("webhook-timestamp");
	const header = headers.get("webhook-signature");
	if (header === null || header.trim() === "" || id === null || id === "")
		return { ok: false, reason: "missing_signature" };
	if (timestamp === null || timestamp === "") return { ok: false, reason: "missing_timestamp" };
	const stale = checkTimestamp(timestamp, 1000, nowMs, config.toleranceSeconds);
	if (stale) return { ok: false, reason: stale };
	const candidates: Uint8Array[] = [];
	// Space-separated `v1,<base64>` items; other versions are skipped, and only the first
	// MAX_SIGNATURE_ITEMS count (docs/providers.md 1.2, applied to every sender).
	for (const item of header.trim().split(/\s+/, MAX_SIGNATURE_ITEMS)) {
		const [version, value] = item.split(",", 2);
		const mac = version === "v1" && value ? base64ToBytes(value) : null;
		if (mac) candidates.push(mac);
	}
	const prefix = utf8(`${id}.${timestamp}.`);
	return { ok: true, candidates, signedContent: (body) => concatBytes(prefix, body) };
}

export const verifyStandard = (input: VerifyInput) =>
	verifySigned(checkStandardSignature(input), input.body, input.keys);

export function parseStandard(body: string, headers: Headers): ParseResult {
	const messageId = idString(headers.get("webhook-id"));
	if (messageId === null) return { ok: false, reason: "missing_message_id" };
	const e = parseObject(body);
	if (typeof e === "string") return { ok: false, reason: e };
	const event = typeof e.type === "string" ? e.type : "";
	const type = STANDARD_MAPPING.resourceType(e);
	const id = STANDARD_MAPPING.resourceId(e);
	const version = STANDARD_MAPPING.version(e, headers);
	if (!type || id === null)
		return { ok: true, event: ignoredEvent("standard", messageId, event, "event not modelled") };
	if (!Number.isSafeInteger(version) || version <= 0)
		return { ok: true, event: ignoredEvent("standard", messageId, event, "no event time to order by") };
	return {
		ok: true,
		event: {
			provider: "standard",
			messageId,
			event,
			attempt: null,
			attemptRef: null,
			// The payload's own time; webhook-timestamp is when it was sent, not when it happened.
			eventAt: typeof e.timestamp === "string" ? epochMs(e.timestamp) : null,
			note: null,
			resource: { type, id, wallet: null, version, status: STANDARD_MAPPING.status(e), data: e.data ?? null },
		},
	};
}

/** docs/providers.md 4: `whsec_<base64>`, the key being the decoded part (`whsec_` optional). */
export function standardKey(secret: string): Uint8Array | null {
	return base64ToBytesLenient(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
}

export const standard = {
	name: "standard",
	label: "Standard Webhooks",
	secretsVariable: "STANDARD_WEBHOOK_SECRETS",
	variables: ["STANDARD_WEBHOOK_SECRETS"],
	// The specification's example secret, which .dev.vars.example also shows.
	publishedSecrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
	keyFromSecret: standardKey,
	settings: () => null,
	keptHeaders: ["webhook-id", "webhook-timestamp"],
	checkSignature: checkStandardSignature,
	parse: parseStandard,
	statusRank: genericStatusRank,
	// Decision (docs/providers.md 6): the template declares effect rules for one sender's orders only.
	effects: {},
	lookupType: "",
	sender: {
		signing: { kind: "id-timestamp-base64" },
		// Svix's published schedule; it retries any non-2xx.
		retries: {
			delays: [5, 300, 1800, 7200, 18000, 36000, 36000],
			jitter: [1, 1],
			fourXxPermanent: false,
			timeoutMs: 15_000,
		},
		attemptHeaders: () => ({}),
		sample: (_messageId, s) =>
			JSON.stringify({
				type: `payment.${s.status.toLowerCase()}`,
				timestamp: new Date(s.at).toISOString(),
				data: { id: s.id, status: s.status, amount: s.amount },
			}),
		expected: (s) => ({ type: "payment", version: s.at }),
	},
} satisfies Provider<null, "standard">;
