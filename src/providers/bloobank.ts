/**
 * BlooBank (docs/providers.md section 1).
 *
 * Signature (1.2): `X-Bloobank-Signature: t=<ms>,v1=<hex>[,v1=<hex>...][,v2=...]`, HMAC-SHA256
 * over the UTF-8 bytes of `{timestamp}.{rawBody}`, tolerance +-SIGNATURE_TOLERANCE_SECONDS.
 * Envelope (1.3): newer `{event,messageId,deliveryAttempt,occurredAt?,data}` or older
 * `{event,messageId,method,pathname,body,query}`; the resource is `data ?? body`.
 */
import { ConfigError, outboundUrl, positiveInt } from "../config";
import {
	canonicalString,
	parsePrivateKey,
	type SignatureFormat,
	sha256,
	signCanonical,
} from "../crypto/access-signature";
import { base64ToBytesLenient, bytesToHex, concatBytes, utf8 } from "../crypto/encoding";
import { type EffectSeed, effectPayload } from "../effects/rules";
import type { Result } from "../result";
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
	idString,
	ignoredEvent,
	isRecord,
	type ParseResult,
	type Provider,
	type ProviderApi,
	type ProviderEnv,
	parseObject,
	positiveIntOrNull,
	type ResourceSnapshot,
} from "./types";

declare module "./model" {
	interface ProviderVariables {
		bloobank:
			| "BLOOBANK_WEBHOOK_SECRETS"
			| "BLOOBANK_SECRET_ENCODING"
			| "BLOOBANK_REFRESH_AFTER_SECONDS"
			| "BLOOBANK_API_BASE_URL"
			| "BLOOBANK_ACCESS_KEY"
			| "BLOOBANK_PRIVATE_KEY"
			| "BLOOBANK_SIGNATURE_FORMAT"
			| "BLOOBANK_WALLETS";
	}
}

export function checkBlooBankSignature({ headers, nowMs, config }: SignatureInput): SignatureCheck {
	const header = headers.get("x-bloobank-signature");
	if (header === null || header.trim() === "") return { ok: false, reason: "missing_signature" };
	const parsed = parseTimestampedHeader(header);
	if (parsed === "malformed_signature") return { ok: false, reason: parsed };

	// Decision (docs/providers.md 1.2): t= and the header must agree when both are present.
	const tsHeader = headers.get("x-bloobank-timestamp")?.trim() ?? null;
	if (parsed.t !== null && tsHeader !== null && parsed.t !== tsHeader)
		return { ok: false, reason: "timestamp_mismatch" };
	const timestamp = parsed.t ?? tsHeader;
	if (timestamp === null || timestamp === "") return { ok: false, reason: "missing_timestamp" };
	const stale = checkTimestamp(timestamp, 1, nowMs, config.toleranceSeconds);
	if (stale) return { ok: false, reason: stale };
	// The timestamp string is signed exactly as sent, then the raw body bytes, never re-encoded.
	const prefix = utf8(`${timestamp}.`);
	return { ok: true, candidates: parsed.v1, signedContent: (body) => concatBytes(prefix, body) };
}

export const verifyBlooBank = (input: VerifyInput) =>
	verifySigned(checkBlooBankSignature(input), input.body, input.keys);

/** docs/providers.md 1.3: older lowercase statuses map onto the newer enum. */
export function normaliseBlooBankStatus(status: string): string {
	const s = status.trim().toLowerCase();
	if (s === "confirmed") return "SUCCESS";
	if (s === "canceled" || s === "cancelled") return "CANCELED";
	return s.toUpperCase();
}

/**
 * A PaymentOrder is recognised by its shape, never by the event name (docs/providers.md 1.3): an `id`
 * and an `ordVersion`, or, for the older generation without `ordVersion`, an event named
 * `payment.*` / `payment_order.*`. Decision: the older generation's version is the epoch ms of
 * `updatedAt`, else `createdAt`.
 */
function paymentOrder(
	event: string,
	resource: unknown,
	walletHint: string | null,
): ResourceSnapshot | "malformed" | "no_wallet" | null {
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
	// Order ids are unique only within a wallet (docs/providers.md 1.4): an order is keyed by
	// (wallet, id), the wallet from the order, its `selfName`, or what the envelope names.
	const wallet = idString(resource.wallet) ?? walletIn(resource.selfName) ?? walletHint;
	if (wallet === null) return "no_wallet";
	return {
		type: "payment_order",
		id,
		wallet,
		version,
		status: normaliseBlooBankStatus(resource.status),
		data: resource,
	};
}

/** The wallet of a resource name such as `wallets/{wallet}/paymentOrders/{id}` (or a path ending so). */
function walletIn(name: unknown): string | null {
	if (typeof name !== "string") return null;
	const m = /(?:^|\/)wallets\/([^/?#]{1,200})\/paymentOrders(?:\/|$|\?)/.exec(name);
	return m?.[1] ? decodeURIComponent(m[1]) : null;
}

/**
 * A PaymentOrder as the list API returns it (newer generation), as a snapshot, or null. The list
 * is per wallet, so an item naming no wallet is the listed wallet's.
 */
export function blooBankOrderSnapshot(item: unknown, listedWallet: string): ResourceSnapshot | null {
	const r = paymentOrder("payment_order.listed", item, listedWallet);
	return r === "malformed" || r === "no_wallet" ? null : r;
}

export function parseBlooBank(body: string, headers: Headers): ParseResult {
	const envelope = parseObject(body);
	if (typeof envelope === "string") return { ok: false, reason: envelope };
	const messageId = idString(envelope.messageId);
	if (messageId === null) return { ok: false, reason: "missing_message_id" };
	const event = typeof envelope.event === "string" ? envelope.event : "";
	const resource = paymentOrder(event, envelope.data ?? envelope.body, walletIn(envelope.pathname));
	const attempt =
		positiveIntOrNull(envelope.deliveryAttempt) ?? positiveIntOrNull(headers.get("x-bloobank-delivery-attempt"));
	// Signed but not an order we can apply: stored and `ignored`, so a fix plus a replay can apply it.
	if (resource === "malformed")
		return {
			ok: true,
			event: ignoredEvent("bloobank", messageId, event, "payment order without id, version or status", { attempt }),
		};
	if (resource === "no_wallet") {
		const note = "payment order without a wallet (its id is unique only within one)";
		return { ok: true, event: ignoredEvent("bloobank", messageId, event, note, { attempt }) };
	}
	if (resource === null)
		return { ok: true, event: ignoredEvent("bloobank", messageId, event, "event not modelled", { attempt }) };
	// The envelope's occurredAt (newer generation), else the order's own updatedAt (docs/providers.md 1.3).
	const eventAt = epochMs(envelope.occurredAt) ?? (isRecord(resource.data) ? epochMs(resource.data.updatedAt) : null);
	return {
		ok: true,
		event: { provider: "bloobank", messageId, event, attempt, attemptRef: null, eventAt, resource, note: null },
	};
}

/**
 * docs/providers.md 1.4: the final statuses outrank the in-flight ones, and REFUNDED, which only
 * follows SUCCESS, outranks them all.
 */
export function blooBankStatusRank(status: string): number {
	switch (status) {
		case "REFUNDED":
			return 2;
		case "SUCCESS":
		case "FAILED":
		case "CANCELED":
		case "EXPIRED":
			return 1;
		default:
			return 0;
	}
}

/**
 * Decision (docs/providers.md 1.2): the HMAC key is the secret's UTF-8 bytes as shown, unless
 * BLOOBANK_SECRET_ENCODING=base64 (then its decoded bytes; padded, unpadded or URL-safe).
 */
export function blooBankKey(secret: string, env: ProviderEnv<"bloobank">): Uint8Array | null {
	const encoding = (env.BLOOBANK_SECRET_ENCODING ?? "utf8").trim().toLowerCase();
	if (encoding === "utf8") return utf8(secret);
	if (encoding === "base64") return base64ToBytesLenient(secret);
	throw new ConfigError("BLOOBANK_SECRET_ENCODING", "must be utf8 or base64");
}

/**
 * docs/providers.md 1.4: which side effects a payment order's state implies, fired on first
 * observation of that state (docs/design.md, side effects).
 */
export function paymentOrderEffects(r: ResourceSnapshot): EffectSeed[] {
	const payload = effectPayload("bloobank", r);
	switch (r.status) {
		case "SUCCESS":
		// REFUNDED only ever follows SUCCESS (docs/providers.md 1.4): an order first seen refunded (its
		// SUCCESS event late or lost) was still settled once. This keeps totals independent of the
		// order in which events arrive.
		case "REFUNDED":
			return [{ kind: "settled", payload }];
		case "FAILED":
			return [{ kind: "payment_failed", payload }];
		case "EXPIRED":
		case "CANCELED":
			return [{ kind: "hold_released", payload }];
		default:
			return [];
	}
}

export interface BlooBankSettings {
	/**
	 * BLOOBANK_REFRESH_AFTER_SECONDS (default 3600): an event older than this is checked against
	 * the API before it is applied, when API credentials are configured (src/reconcile/refresh.ts).
	 */
	refreshAfterSeconds: number;
}

export function blooBankSettings(env: ProviderEnv<"bloobank">): BlooBankSettings {
	return {
		refreshAfterSeconds: positiveInt("BLOOBANK_REFRESH_AFTER_SECONDS", env.BLOOBANK_REFRESH_AFTER_SECONDS, 3600),
	};
}

/** The API's base URL and the Access Protocol credentials (docs/providers.md 1.5). */
export interface BlooBankCredentials {
	baseUrl: string;
	accessKey: string;
	privateKey: Uint8Array;
	signatureFormat: SignatureFormat;
}

export const DEFAULT_API_BASE_URL = "https://txengine.bloobank.com/txengine/v1";

export function blooBankCredentials(
	env: ProviderEnv<"bloobank">,
): Result<{ value: BlooBankCredentials }, { error: string }> {
	const fail = (error: string) => ({ ok: false as const, error });
	const baseUrl = (env.BLOOBANK_API_BASE_URL ?? DEFAULT_API_BASE_URL).trim().replace(/\/+$/, "");
	try {
		outboundUrl("BLOOBANK_API_BASE_URL", baseUrl);
	} catch (err) {
		return fail((err as Error).message);
	}
	const accessKey = env.BLOOBANK_ACCESS_KEY?.trim() ?? "";
	if (accessKey === "") return fail("BLOOBANK_ACCESS_KEY is not set");
	if (!env.BLOOBANK_PRIVATE_KEY?.trim()) return fail("BLOOBANK_PRIVATE_KEY is not set");
	const privateKey = parsePrivateKey(env.BLOOBANK_PRIVATE_KEY);
	if (!privateKey) return fail("BLOOBANK_PRIVATE_KEY must be 64 hex characters of a valid secp256k1 key");
	const format = (env.BLOOBANK_SIGNATURE_FORMAT ?? "compact").trim().toLowerCase();
	if (format !== "compact" && format !== "der") return fail("BLOOBANK_SIGNATURE_FORMAT must be compact or der");
	return { ok: true, value: { baseUrl, accessKey, privateKey, signatureFormat: format } };
}

/** The Access Protocol headers of one request (docs/providers.md 1.5): a new request id and timestamp each time. */
async function accessHeaders(c: BlooBankCredentials, method: string, url: URL, nowMs: number): Promise<Headers> {
	const requestId = crypto.randomUUID();
	const timestamp = String(nowMs);
	const canonical = canonicalString({
		accessKey: c.accessKey,
		requestId,
		timestamp,
		method,
		pathname: `${url.pathname}${url.search}`,
		// Every call is a GET: the body hashed is empty.
		bodySha256Hex: bytesToHex(await sha256(utf8(""))),
	});
	return new Headers({
		accept: "application/json",
		"x-access-key": c.accessKey,
		"x-access-timestamp": timestamp,
		"x-access-request-id": requestId,
		"x-access-signature": await signCanonical(canonical, c.privateKey, c.signatureFormat),
	});
}

const ordersUrl = (c: BlooBankCredentials, wallet: string) =>
	`${c.baseUrl}/wallets/${encodeURIComponent(wallet)}/paymentOrders`;

/** The paymentOrders API (docs/providers.md 1.5): the list per wallet, and one order. */
export const blooBankApi: ProviderApi<BlooBankCredentials, BlooBankSettings, "bloobank"> = {
	type: "payment_order",
	// Order ids are unique only within a wallet (docs/providers.md 1.4).
	accountScoped: true,
	accountsVariable: "BLOOBANK_WALLETS",
	privateKeyVariable: "BLOOBANK_PRIVATE_KEY",
	credentials: blooBankCredentials,
	listUrl: (c, wallet) => new URL(ordersUrl(c, wallet)),
	itemUrl: (c, wallet, id) => new URL(`${ordersUrl(c, wallet)}/${encodeURIComponent(id)}`),
	signedHeaders: accessHeaders,
	snapshot: blooBankOrderSnapshot,
	// BlooBank's best practices: GET the resource fresh when a long delay elapsed (docs/providers.md 1.6).
	refreshAfterMs: (settings) => settings.refreshAfterSeconds * 1000,
};

export const bloobank = {
	name: "bloobank",
	label: "BlooBank",
	secretsVariable: "BLOOBANK_WEBHOOK_SECRETS",
	variables: [
		"BLOOBANK_WEBHOOK_SECRETS",
		"BLOOBANK_SECRET_ENCODING",
		"BLOOBANK_REFRESH_AFTER_SECONDS",
		// The API (`api` below), for reconciliation and the refresh (src/reconcile/).
		"BLOOBANK_API_BASE_URL",
		"BLOOBANK_ACCESS_KEY",
		"BLOOBANK_PRIVATE_KEY",
		"BLOOBANK_SIGNATURE_FORMAT",
		"BLOOBANK_WALLETS",
	],
	// The development secret of .dev.vars.example.
	publishedSecrets: ["dev-bloobank-secret-change-me-0123456789abcdef"],
	keyFromSecret: blooBankKey,
	settings: blooBankSettings,
	keptHeaders: ["x-bloobank-delivery-attempt"],
	checkSignature: checkBlooBankSignature,
	parse: parseBlooBank,
	statusRank: blooBankStatusRank,
	effects: { payment_order: paymentOrderEffects },
	lookupType: "payment_order",
	sender: {
		signing: {
			kind: "timestamp-hex",
			header: "x-bloobank-signature",
			unit: "ms",
			timestampHeader: "x-bloobank-timestamp",
			encodingVariable: "BLOOBANK_SECRET_ENCODING",
		},
		retries: {
			delays: [10, 60, 600, 3600, 21600, 43200, 86400, 86400],
			jitter: [0.5, 1.5],
			fourXxPermanent: true,
			timeoutMs: 10_000,
		},
		attemptHeaders: (_messageId, attempt) => ({ "x-bloobank-delivery-attempt": String(attempt) }),
		sample: (messageId, s, attempt) => {
			const at = new Date(s.at).toISOString();
			return JSON.stringify({
				event: `payment_order.${s.status.toLowerCase()}`,
				messageId,
				deliveryAttempt: attempt,
				occurredAt: at,
				data: {
					id: s.id,
					wallet: "w1",
					ordVersion: s.version,
					direction: s.direction,
					status: s.status,
					amount: s.amount,
					currency: s.currency,
					createdAt: at,
					updatedAt: at,
				},
			});
		},
		expected: (s) => ({ type: "payment_order", version: s.version }),
	},
	api: blooBankApi,
} satisfies Provider<BlooBankSettings, "bloobank">;
