/**
 * The provider interface: what ingress, apply and the admin views know about a sender.
 * A provider is one file exporting a `Provider`; src/providers/index.ts lists them.
 */
import type { Env, EnvVar } from "../bindings";
import type { EffectSeed } from "../effects/rules";
import type { Result } from "../result";
import type { NormalisedEvent, ProviderName, ResourceSnapshot } from "./model";
import type { SignatureCheck, SignatureInput } from "./signature";

export type { NormalisedEvent, ProviderName, ResourceSnapshot } from "./model";
export { VERIFY_FAILURES, type VerifyFailure, type VerifyResult } from "./signature";

/**
 * The only bodies a provider refuses after verification: without JSON or a message id there is
 * nothing to store under a dedupe key. Anything else signed but not modelled (an unknown shape,
 * an unsupported version) is stored and marked `ignored` with a note (docs/design.md, statuses),
 * so a fix plus a replay can still apply it.
 */
export type ParseFailure = "invalid_json" | "not_an_object" | "missing_message_id";

export type ParseResult = Result<{ event: NormalisedEvent }, { reason: ParseFailure; detail?: string }>;

/**
 * One sender, in one file: its secrets variable and how a secret becomes an HMAC key, its own
 * settings, the signature check, the parser, the status rank and the effect rules. `S` is the type
 * of its settings: `settings(env)` makes them when the configuration is parsed, `parse` gets them.
 */
export interface Provider<S = unknown> {
	name: ProviderName;
	/** The variable holding its comma-separated secrets; every one is tried (rotation). */
	secretsVariable: EnvVar;
	/**
	 * The HMAC key of one configured secret, or null when it does not decode (a configuration
	 * error: never a 401). May read its own settings from `env`, throwing ConfigError.
	 */
	keyFromSecret(secret: string, env: Env): Uint8Array | null;
	/** Its own settings from its own variables (throws ConfigError naming the variable). */
	settings(env: Env): S;
	/**
	 * The non-secret headers parse() reads. They are stored with the delivery, so the consumer
	 * re-parses exactly what ingress parsed. Never a signature header.
	 */
	keptHeaders: readonly string[];
	/** The checks that need no body (see ./signature.ts); the MACs are computed after the body is read. */
	checkSignature(input: SignatureInput): SignatureCheck;
	/** Parses a verified body; `headers` holds at least `keptHeaders`. */
	parse(body: string, headers: Headers, settings: S): ParseResult;
	/**
	 * Decides a tie between two snapshots of one resource with equal versions: the higher rank
	 * wins, equal ranks keep the stored one (docs/design.md, statuses). Final beats non-final.
	 */
	statusRank(status: string): number;
	/**
	 * Side effects, declared per resource type of this sender only (docs/design.md, effects): no
	 * other sender's events can reach them, whatever type name they carry.
	 */
	effects: Readonly<Record<string, EffectRule>>;
}

/** What first observation of a resource state implies (see src/effects/rules.ts). */
export type EffectRule = (resource: ResourceSnapshot) => EffectSeed[];

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
		eventAt: null,
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

/**
 * Decision (docs/providers.md, status ranks): for senders that publish no final set, these
 * statuses are final (rank 1), and reversals that can only follow a final status rank above
 * them (2). Everything else is in flight (0).
 */
const GENERIC_REVERSALS = new Set(["REFUNDED", "REVERSED", "CHARGEBACK", "CHARGED_BACK"]);
const GENERIC_FINAL = new Set([
	"SUCCESS",
	"SUCCEEDED",
	"PAID",
	"CONFIRMED",
	"COMPLETED",
	"SETTLED",
	"FAILED",
	"DECLINED",
	"REJECTED",
	"CANCELED",
	"CANCELLED",
	"EXPIRED",
]);

export function genericStatusRank(status: string): number {
	// A status taken from an event name (`CHARGE.SUCCEEDED`) is ranked by its last part.
	const last = status.slice(status.lastIndexOf(".") + 1);
	return GENERIC_REVERSALS.has(last) ? 2 : GENERIC_FINAL.has(last) ? 1 : 0;
}
