/**
 * The provider interface: what ingress, apply and the admin views know about a sender.
 * A provider is one file exporting a `Provider`; src/providers/index.ts lists them.
 */
import type { Config, ProviderName } from "../env";

/** A resource snapshot as the sender last described it. */
export interface ResourceSnapshot {
	type: string;
	id: string;
	wallet: string | null;
	/** Orders snapshots of one resource: higher wins (BlooBank: ordVersion). */
	version: number;
	status: string;
	data: unknown;
}

export interface NormalisedEvent {
	provider: ProviderName;
	/** The sender's dedupe id (BlooBank messageId). Used for dedupe only, never as a business id. */
	messageId: string;
	event: string;
	/** The sender's attempt counter, for audit. */
	attempt: number | null;
	/** The sender's attempt id, where it has one (Bold `attemptId`), for audit. */
	attemptRef: string | null;
	/** A second dedupe key, unique per provider (Pazy: `type:paymentId`); null for most senders. */
	dedupeKey: string | null;
	/** null: an event we do not model; stored, marked `ignored` (with `note`), answered 2xx. */
	resource: ResourceSnapshot | null;
	note: string | null;
}

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

export type VerifyResult = { ok: true } | { ok: false; reason: VerifyFailure };

export type ParseFailure =
	| "invalid_json"
	| "not_an_object"
	| "missing_message_id"
	| "malformed_resource"
	| "malformed_envelope";

export type ParseResult = { ok: true; event: NormalisedEvent } | { ok: false; reason: ParseFailure; detail?: string };

export interface VerifyInput {
	headers: Headers;
	/** The body exactly as received: never re-serialized. */
	body: Uint8Array;
	secrets: readonly string[];
	/** Injected clock, epoch milliseconds. */
	nowMs: number;
	config: Config;
}

export interface Provider {
	name: ProviderName;
	/**
	 * The non-secret headers parse() reads. They are stored with the delivery, so the consumer
	 * re-parses exactly what ingress parsed. Never a signature header.
	 */
	keptHeaders: readonly string[];
	verify(input: VerifyInput): Promise<VerifyResult>;
	/** Parses a verified body; `headers` holds at least `keptHeaders`. */
	parse(body: string, headers: Headers, config: Config): ParseResult;
}

/** A verified event that carries nothing we model: stored, `ignored`, answered 2xx. */
export function ignoredEvent(
	provider: ProviderName,
	messageId: string,
	event: string,
	note: string,
	extra: Partial<NormalisedEvent> = {},
): NormalisedEvent {
	return {
		provider,
		messageId,
		event,
		attempt: null,
		attemptRef: null,
		dedupeKey: null,
		...extra,
		resource: null,
		note,
	};
}

export function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A sender's id: a non-empty string of bounded length (it becomes a unique key). */
export function idString(value: unknown): string | null {
	return typeof value === "string" && value.trim() !== "" && value.length <= 200 ? value : null;
}

export function positiveIntOrNull(value: unknown): number | null {
	if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) return value;
	if (typeof value === "string" && /^\d{1,15}$/.test(value)) {
		const n = Number(value);
		return n > 0 ? n : null;
	}
	return null;
}

/** Epoch ms of an ISO/RFC 3339 timestamp, or null. */
export function epochMs(value: unknown): number | null {
	if (typeof value !== "string") return null;
	const ms = Date.parse(value);
	return Number.isFinite(ms) ? ms : null;
}

/** Parses JSON into an object, or says why not. */
export function parseObject(body: string): Record<string, unknown> | "invalid_json" | "not_an_object" {
	let value: unknown;
	try {
		value = JSON.parse(body);
	} catch {
		return "invalid_json";
	}
	return isRecord(value) ? value : "not_an_object";
}
