/**
 * Bold (docs/providers.md 2).
 *
 * Decision (signature details are not published): `X-HMAC-Signature` is HMAC-SHA256 over the raw
 * body with the secret's UTF-8 bytes, hex; base64 is accepted too. There is no timestamp, so
 * replay protection is the dedupe table alone (`eventId`, kept DEDUPE_RETENTION_DAYS).
 * Ordering: `occurredOn` (newer wins per entity/entityId). Majors outside
 * BOLD_SUPPORTED_MAJOR_VERSIONS are stored and marked ignored ("unsupported"), answered 2xx.
 */
import { ConfigError, list } from "../config";
import { base64ToBytes, hexToBytes, utf8 } from "../crypto/encoding";
import { type SignatureCheck, type SignatureInput, type VerifyInput, verifySigned } from "./signature";
import {
	epochMs,
	genericStatusRank,
	idString,
	ignoredEvent,
	isRecord,
	type ParseResult,
	type Provider,
	type ProviderEnv,
	parseObject,
} from "./types";

declare module "./model" {
	interface ProviderVariables {
		bold: "BOLD_WEBHOOK_SECRETS" | "BOLD_SUPPORTED_MAJOR_VERSIONS";
	}
}

const EVENT_NAME = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/i;

function decodeMac(value: string): Uint8Array | null {
	const v = value.trim();
	if (/^[0-9a-fA-F]{64}$/.test(v)) return hexToBytes(v);
	const b = base64ToBytes(v);
	return b && b.byteLength === 32 ? b : null;
}

export function checkBoldSignature({ headers }: SignatureInput): SignatureCheck {
	const header = headers.get("x-hmac-signature");
	if (header === null || header.trim() === "") return { ok: false, reason: "missing_signature" };
	const mac = decodeMac(header);
	if (mac === null) return { ok: false, reason: "malformed_signature" };
	return { ok: true, candidates: [mac], signedContent: (body) => body };
}

export const verifyBold = (input: VerifyInput) => verifySigned(checkBoldSignature(input), input.body, input.keys);

const nonNegativeInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

export interface BoldSettings {
	/** BOLD_SUPPORTED_MAJOR_VERSIONS (default 1): other majors are stored as `ignored`. */
	supportedMajors: readonly number[];
}

export function boldSettings(env: ProviderEnv<"bold">): BoldSettings {
	const supportedMajors = list(env.BOLD_SUPPORTED_MAJOR_VERSIONS ?? "1").map((m) => {
		const n = Number(m);
		if (!Number.isSafeInteger(n) || n < 0) throw new ConfigError("BOLD_SUPPORTED_MAJOR_VERSIONS", "must list integers");
		return n;
	});
	return { supportedMajors };
}

export function parseBold(body: string, headers: Headers, settings: BoldSettings): ParseResult {
	const e = parseObject(body);
	if (typeof e === "string") return { ok: false, reason: e };
	const messageId = idString(e.eventId);
	if (messageId === null) return { ok: false, reason: "missing_message_id" };
	// Bold's consumer rules: validate eventName, versions and the entity identifier. What fails them
	// is signed, so it is stored and `ignored` with the reason, never refused (docs/providers.md 2).
	const attemptRef = idString(e.attemptId) ?? idString(headers.get("x-attempt-id"));
	const extra = { attemptRef };
	const rawName = typeof e.eventName === "string" ? e.eventName.slice(0, 200) : "";
	const ignore = (note: string): ParseResult => ({
		ok: true,
		event: ignoredEvent("bold", messageId, rawName, note, extra),
	});
	const eventName = e.eventName;
	if (typeof eventName !== "string" || !EVENT_NAME.test(eventName)) return ignore("eventName is not domain.action");
	if (!nonNegativeInt(e.majorVersion) || !nonNegativeInt(e.minorVersion))
		return ignore("majorVersion and minorVersion must be non-negative integers");
	if (!settings.supportedMajors.includes(e.majorVersion)) {
		return {
			ok: true,
			event: ignoredEvent("bold", messageId, eventName, `unsupported major version ${e.majorVersion}`, extra),
		};
	}
	const entity = idString(e.entity);
	const entityId = idString(e.entityId);
	const occurredOn = epochMs(e.occurredOn);
	if (entity === null || entityId === null || occurredOn === null)
		return ignore("entity, entityId (a string) and occurredOn are required");
	const payload = e.payload;
	const status =
		isRecord(payload) && typeof payload.status === "string" ? payload.status.toUpperCase() : eventName.toUpperCase();
	return {
		ok: true,
		event: {
			provider: "bold",
			messageId,
			event: eventName,
			attempt: null,
			attemptRef,
			eventAt: occurredOn,
			note: null,
			resource: { type: entity, id: entityId, wallet: null, version: occurredOn, status, data: payload ?? null },
		},
	};
}

export const bold = {
	name: "bold",
	label: "Bold",
	secretsVariable: "BOLD_WEBHOOK_SECRETS",
	variables: ["BOLD_WEBHOOK_SECRETS", "BOLD_SUPPORTED_MAJOR_VERSIONS"],
	publishedSecrets: [],
	// Decision (docs/providers.md 2): the key is the secret's UTF-8 bytes as shown.
	keyFromSecret: (secret) => utf8(secret),
	settings: boldSettings,
	keptHeaders: ["x-attempt-id"],
	checkSignature: checkBoldSignature,
	parse: parseBold,
	statusRank: genericStatusRank,
	// Decision (docs/providers.md 6): the template declares effect rules for one sender's orders only.
	effects: {},
	lookupType: "",
	sender: {
		signing: { kind: "body-hex", header: "x-hmac-signature" },
		retries: { delays: [20, 40, 80, 160], jitter: [1, 1], fourXxPermanent: true, timeoutMs: 30_000 },
		attemptHeaders: (messageId, attempt) => ({ "x-attempt-id": `${messageId}-a${attempt}` }),
		sample: (messageId, s) =>
			JSON.stringify({
				eventId: messageId,
				eventName: `payment.${s.status.toLowerCase()}`,
				entity: "payment",
				entityId: s.id,
				occurredOn: new Date(s.at).toISOString(),
				majorVersion: 1,
				minorVersion: 0,
				payload: { id: s.id, status: s.status, amount: s.amount, currency: s.currency },
			}),
		expected: (s) => ({ type: "payment", version: s.at }),
	},
} satisfies Provider<BoldSettings, "bold">;
