/**
 * Bold (PROVIDERS.md section 2).
 *
 * Decision (signature details are not published): `X-HMAC-Signature` is HMAC-SHA256 over the raw
 * body with the secret's UTF-8 bytes, hex; base64 is accepted too. There is no timestamp, so
 * replay protection is the dedupe table alone (`eventId`, kept DEDUPE_RETENTION_DAYS).
 * Ordering: `occurredOn` (newer wins per entity/entityId). Majors outside
 * BOLD_SUPPORTED_MAJOR_VERSIONS are stored and marked ignored ("unsupported"), answered 2xx.
 */
import { base64ToBytes, hexToBytes, utf8 } from "../crypto/encoding";
import { verifyAnyHmacSha256 } from "../crypto/hmac";
import type { Config } from "../env";
import {
	epochMs,
	idString,
	ignoredEvent,
	isRecord,
	type ParseResult,
	type Provider,
	parseObject,
	type VerifyInput,
	type VerifyResult,
} from "./types";

const EVENT_NAME = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/i;

function decodeMac(value: string): Uint8Array | null {
	const v = value.trim();
	if (/^[0-9a-fA-F]{64}$/.test(v)) return hexToBytes(v);
	const b = base64ToBytes(v);
	return b && b.byteLength === 32 ? b : null;
}

export async function verifyBold({ headers, body, secrets }: VerifyInput): Promise<VerifyResult> {
	const header = headers.get("x-hmac-signature");
	if (header === null || header.trim() === "") return { ok: false, reason: "missing_signature" };
	const mac = decodeMac(header);
	if (mac === null) return { ok: false, reason: "malformed_signature" };
	const keys = secrets.map(utf8).filter((k) => k.byteLength > 0);
	return (await verifyAnyHmacSha256(keys, body, [mac])) ? { ok: true } : { ok: false, reason: "signature_mismatch" };
}

const nonNegativeInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

export function parseBold(body: string, headers: Headers, config: Config): ParseResult {
	const e = parseObject(body);
	if (typeof e === "string") return { ok: false, reason: e };
	const messageId = idString(e.eventId);
	if (messageId === null) return { ok: false, reason: "missing_message_id" };
	// Bold's consumer rules: validate eventName, versions and the entity identifier.
	const eventName = e.eventName;
	if (typeof eventName !== "string" || !EVENT_NAME.test(eventName)) return { ok: false, reason: "malformed_envelope" };
	if (!nonNegativeInt(e.majorVersion) || !nonNegativeInt(e.minorVersion))
		return { ok: false, reason: "malformed_envelope" };
	const attemptRef = idString(e.attemptId) ?? idString(headers.get("x-attempt-id"));
	const extra = { attemptRef };
	if (!config.boldSupportedMajors.includes(e.majorVersion)) {
		return {
			ok: true,
			event: ignoredEvent("bold", messageId, eventName, `unsupported major version ${e.majorVersion}`, extra),
		};
	}
	const entity = idString(e.entity);
	const entityId = idString(e.entityId);
	const occurredOn = epochMs(e.occurredOn);
	if (entity === null || entityId === null || occurredOn === null) return { ok: false, reason: "malformed_resource" };
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
			dedupeKey: null,
			note: null,
			resource: { type: entity, id: entityId, wallet: null, version: occurredOn, status, data: payload ?? null },
		},
	};
}

export const bold: Provider = {
	name: "bold",
	keptHeaders: ["x-attempt-id"],
	verify: verifyBold,
	parse: parseBold,
};
