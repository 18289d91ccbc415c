/**
 * Pieces shared by the HMAC schemes of several senders: the `t=...,v1=...` header (BlooBank,
 * Pazy) and the timestamp tolerance check (BlooBank, Pazy, Standard Webhooks), both directions.
 */
import { hexToBytes } from "../crypto/encoding";
import type { VerifyFailure } from "./types";

const V1_HEX = /^[0-9a-fA-F]{64}$/;

export interface TimestampedHeader {
	t: string | null;
	/** Decoded `v1=` signatures; malformed items are skipped (a rotation may mix old and new). */
	v1: Uint8Array[];
}

export function parseTimestampedHeader(header: string): TimestampedHeader | "malformed_signature" {
	let t: string | null = null;
	const v1: Uint8Array[] = [];
	for (const item of header.split(",")) {
		const eq = item.indexOf("=");
		if (eq <= 0) return "malformed_signature";
		const key = item.slice(0, eq).trim();
		const value = item.slice(eq + 1).trim();
		if (key === "t") {
			if (t !== null && t !== value) return "malformed_signature";
			t = value;
		} else if (key === "v1" && V1_HEX.test(value)) {
			v1.push(hexToBytes(value) as Uint8Array);
		}
		// Versions we do not understand (v2=...) are skipped, not fatal.
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
