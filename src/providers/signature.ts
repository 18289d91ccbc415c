/**
 * Signature checking shared by every sender, in two steps so that a request's cost is bounded
 * before its body is read (docs/design.md invariant 8; the README's threat model):
 * 1. `checkSignature` (per provider, no body): headers present, timestamp within tolerance, the
 *    candidate MACs decoded from at most MAX_SIGNATURE_ITEMS items;
 * 2. `verifySigned`: one HMAC per configured key over the signed content, compared in constant
 *    time with every candidate.
 */

import type { WebhookConfig } from "../config";
import { hexToBytes } from "../crypto/encoding";
import { matchingKey } from "../crypto/hmac";
import type { Done, Result } from "../result";

/** Reason codes are recorded in the rejection log; the wire only ever sees an empty 401. */
export const VERIFY_FAILURES = [
	"missing_signature",
	"malformed_signature",
	"missing_timestamp",
	"malformed_timestamp",
	"timestamp_mismatch",
	"timestamp_out_of_tolerance",
	"no_supported_signature",
	"signature_mismatch",
] as const;
export type VerifyFailure = (typeof VERIFY_FAILURES)[number];

export type VerifyResult = Result<Done, { reason: VerifyFailure }>;

/** Items past this many are ignored, so a header of thousands of items costs nothing more. */
export const MAX_SIGNATURE_ITEMS = 16;

export type SignatureCheck = Result<
	{
		/** The decoded signatures to compare against. */
		candidates: Uint8Array[];
		/** The bytes the sender signed, given the raw body exactly as received. */
		signedContent(body: Uint8Array): Uint8Array;
	},
	{ reason: VerifyFailure }
>;

export interface SignatureInput {
	headers: Headers;
	/** Injected clock, epoch milliseconds. */
	nowMs: number;
	config: Pick<WebhookConfig, "toleranceSeconds">;
}

export interface VerifyInput extends SignatureInput {
	/** The body exactly as received: never re-serialized. */
	body: Uint8Array;
	/** The provider's HMAC keys, decoded from its secrets when the configuration was parsed. */
	keys: readonly Uint8Array[];
}

export async function verifySigned(
	check: SignatureCheck,
	body: Uint8Array,
	keys: readonly Uint8Array[],
): Promise<VerifyResult> {
	const r = await verifiedBy(check, body, keys);
	return r.ok ? { ok: true } : r;
}

/** verifySigned, saying which configured secret (by position) verified it: the rotation status. */
export async function verifiedBy(
	check: SignatureCheck,
	body: Uint8Array,
	keys: readonly Uint8Array[],
): Promise<Result<{ position: number }, { reason: VerifyFailure }>> {
	if (!check.ok) return check;
	if (check.candidates.length === 0) return { ok: false, reason: "no_supported_signature" };
	const position = await matchingKey(keys, check.signedContent(body), check.candidates);
	return position === null ? { ok: false, reason: "signature_mismatch" } : { ok: true, position };
}

const V1_HEX = /^[0-9a-fA-F]{64}$/;

export interface TimestampedHeader {
	t: string | null;
	/** Decoded `v1=` signatures. */
	v1: Uint8Array[];
}

/**
 * `t=...,v1=...[,v1=...][,v2=...]` (docs/providers.md 1.2 and 3). Decision (docs/providers.md 1.2): an item
 * without `=`, of a version we do not know, or a malformed `v1` is skipped, not fatal (a trailing
 * comma must not reject a genuine delivery); only the first MAX_SIGNATURE_ITEMS items count.
 */
export function parseTimestampedHeader(header: string): TimestampedHeader | "malformed_signature" {
	let t: string | null = null;
	const v1: Uint8Array[] = [];
	for (const item of header.split(",", MAX_SIGNATURE_ITEMS)) {
		const eq = item.indexOf("=");
		if (eq <= 0) continue;
		const key = item.slice(0, eq).trim();
		const value = item.slice(eq + 1).trim();
		if (key === "t") {
			// Two different timestamps: which one was signed is unknowable.
			if (t !== null && t !== value) return "malformed_signature";
			t = value;
		} else if (key === "v1" && V1_HEX.test(value)) {
			v1.push(hexToBytes(value) as Uint8Array);
		}
	}
	return { t, v1 };
}

/**
 * Checks a timestamp given as a string of digits in `unitMs` units against the injected clock.
 * Digits only: a sender's timestamp is never guessed at.
 */
export function checkTimestamp(
	value: string,
	unitMs: 1 | 1000,
	nowMs: number,
	toleranceSeconds: number,
): VerifyFailure | null {
	if (!/^\d{1,16}$/.test(value)) return "malformed_timestamp";
	const ms = Number(value) * unitMs;
	return Math.abs(nowMs - ms) > toleranceSeconds * 1000 ? "timestamp_out_of_tolerance" : null;
}
