/**
 * Pazy (docs/providers.md 3).
 *
 * Decision (signature details are not published): `X-Pazy-Signature: t=<unix seconds>,v1=<hex>`,
 * HMAC-SHA256 over `{t}.{rawBody}`, +-SIGNATURE_TOLERANCE_SECONDS. Envelope
 * `{ id, type, createdAt, data }`; dedupe on `id`. Decision (revised): `data.paymentId` names the
 * resource, not the event, so a new event id for the same payment and type is stored and goes
 * through the version rule. Ordering: `data.paymentDate` when present (null on failures and
 * reversals), else `createdAt`.
 */
import { concatBytes, utf8 } from "../crypto/encoding";
import {
	checkTimestamp,
	parseTimestampedHeader,
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
	positiveIntOrNull,
} from "./types";

declare module "./model" {
	interface ProviderVariables {
		pazy: "PAZY_WEBHOOK_SECRETS";
	}
}

export function checkPazySignature({ headers, nowMs, config }: SignatureInput): SignatureCheck {
	const header = headers.get("x-pazy-signature");
	if (header === null || header.trim() === "") return { ok: false, reason: "missing_signature" };
	const parsed = parseTimestampedHeader(header);
	if (parsed === "malformed_signature") return { ok: false, reason: parsed };
	if (parsed.t === null || parsed.t === "") return { ok: false, reason: "missing_timestamp" };
	const stale = checkTimestamp(parsed.t, 1000, nowMs, config.toleranceSeconds);
	if (stale) return { ok: false, reason: stale };
	const prefix = utf8(`${parsed.t}.`);
	return { ok: true, candidates: parsed.v1, signedContent: (body) => concatBytes(prefix, body) };
}

export const verifyPazy = (input: VerifyInput) => verifySigned(checkPazySignature(input), input.body, input.keys);

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
	if (!isRecord(data) || paymentId === null || version === null) {
		const note = "payment event without paymentId or a time";
		return { ok: true, event: ignoredEvent("pazy", messageId, type, note, { attempt }) };
	}
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
			eventAt: epochMs(e.createdAt),
			note: null,
			resource: { type: "payment", id: paymentId, wallet: null, version, status, data },
		},
	};
}

export const pazy = {
	name: "pazy",
	label: "Pazy",
	secretsVariable: "PAZY_WEBHOOK_SECRETS",
	variables: ["PAZY_WEBHOOK_SECRETS"],
	publishedSecrets: [],
	// Decision (docs/providers.md 3): the key is the secret's UTF-8 bytes as shown.
	keyFromSecret: (secret) => utf8(secret),
	settings: () => null,
	keptHeaders: ["x-pazy-webhook-attempt"],
	checkSignature: checkPazySignature,
	parse: parsePazy,
	statusRank: genericStatusRank,
	// Decision (docs/providers.md 6): the template declares effect rules for one sender's orders only.
	effects: {},
	lookupType: "payment",
	sender: {
		signing: { kind: "timestamp-hex", header: "x-pazy-signature", unit: "s" },
		retries: { delays: [30, 60, 120, 240], jitter: [0.9, 1.1], fourXxPermanent: false, timeoutMs: 10_000 },
		attemptHeaders: (_messageId, attempt) => ({ "x-pazy-webhook-attempt": String(attempt) }),
		sample: (messageId, s) => {
			const at = new Date(s.at).toISOString();
			return JSON.stringify({
				id: messageId,
				type: `payment.${s.status.toLowerCase()}`,
				createdAt: at,
				data: { paymentId: s.id, status: s.status, amount: s.amount, paymentDate: at },
			});
		},
		expected: (s) => ({ type: "payment", version: s.at }),
	},
} satisfies Provider<null, "pazy">;
