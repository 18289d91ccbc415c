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
	/** null: an event we do not model; stored, marked `ignored`, answered 2xx. */
	resource: ResourceSnapshot | null;
}

/** Reason codes are recorded in the rejection log; the wire only ever sees an empty 401. */
export type VerifyFailure =
	| "missing_signature"
	| "malformed_signature"
	| "missing_timestamp"
	| "malformed_timestamp"
	| "timestamp_mismatch"
	| "timestamp_out_of_tolerance"
	| "no_supported_signature"
	| "signature_mismatch";

export type VerifyResult = { ok: true } | { ok: false; reason: VerifyFailure };

export type ParseFailure = "invalid_json" | "not_an_object" | "missing_message_id" | "malformed_resource";

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
	verify(input: VerifyInput): Promise<VerifyResult>;
	/**
	 * Parses a verified body. `headers` is absent when re-parsing a stored delivery in the
	 * consumer, so nothing that decides state may come from headers.
	 */
	parse(body: string, config: Config, headers?: Headers): ParseResult;
}
