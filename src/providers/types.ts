/**
 * The provider interface: what ingress, apply and the admin views know about a sender.
 * A provider is one file exporting a `Provider`; src/providers/index.ts lists them.
 */
import type { EffectSeed } from "../effects/rules";
import type { Result } from "../result";
import type { NormalisedEvent, ProviderName, ProviderVariables, ResourceSnapshot } from "./model";
import type { SignatureCheck, SignatureInput } from "./signature";

export type { NormalisedEvent, ProviderName, ResourceSnapshot } from "./model";
export { VERIFY_FAILURES, type VerifyFailure, type VerifyResult } from "./signature";

/**
 * The only bodies a provider refuses after verification: without JSON or a message id there is
 * nothing to store under a dedupe key. Anything else signed but not modelled (an unknown shape,
 * an unsupported version) is stored and marked `ignored` with a note (docs/design.md, delivery statuses),
 * so a fix plus a replay can still apply it.
 */
export type ParseFailure = "invalid_json" | "not_an_object" | "missing_message_id";

export type ParseResult = Result<{ event: NormalisedEvent }, { reason: ParseFailure; detail?: string }>;

/** The variables a provider reads, as `env` holds them (unset: undefined). */
export type ProviderEnv<N extends ProviderName> = { readonly [V in ProviderVariables[N]]?: string };

/**
 * One sender, in one file: its secrets variable and how a secret becomes an HMAC key, its own
 * settings, the signature check, the parser, the status rank, the effect rules, and how the tools
 * play it. `S` is the type of its settings: `settings(env)` makes them when the configuration is
 * parsed, `parse` gets them. `N` is its name, declared in its file (see ./model.ts).
 */
export interface Provider<S = unknown, N extends ProviderName = ProviderName> {
	name: N;
	/** Its name as people write it (the console's texts). */
	label: string;
	/** The variable holding its comma-separated secrets; every one is tried (rotation). */
	secretsVariable: ProviderVariables[N];
	/** Every variable it reads, the secrets variable included (wrangler.toml's [vars] are checked against them). */
	variables: readonly ProviderVariables[N][];
	/**
	 * Values published with the template or the sender's documentation (a test secret): a receiver
	 * configured with one is refused unless the request comes to localhost (docs/design.md, configuration).
	 */
	publishedSecrets: readonly string[];
	/**
	 * The HMAC key of one configured secret, or null when it does not decode (a configuration
	 * error: never a 401). May read its own settings from `env`, throwing ConfigError.
	 */
	keyFromSecret(secret: string, env: ProviderEnv<N>): Uint8Array | null;
	/** Its own settings from its own variables (throws ConfigError naming the variable). */
	settings(env: ProviderEnv<N>): S;
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
	 * wins, equal ranks keep the stored one (docs/design.md, delivery statuses). Final beats non-final.
	 */
	statusRank(status: string): number;
	/**
	 * Side effects, declared per resource type of this sender only (docs/design.md, side effects): no
	 * other sender's events can reach them, whatever type name they carry.
	 */
	effects: Readonly<Record<string, EffectRule>>;
	/** The resource type the console's lookup form offers first for this sender ("" when it varies). */
	lookupType: string;
	/** How the simulator, send-test-event and the tests play this sender. */
	sender: SenderModel;
	/** Its API, when the receiver calls one (reconciliation, the refresh); absent for a webhook-only sender. */
	api?: ProviderApi<unknown, S, N>;
}

/**
 * A sender's API as the receiver calls it (docs/design.md, the flow, step 5): its list, paged over a
 * time window for the daily reconciliation, and one resource fetched fresh (the refresh of old
 * events, the console's check). The exchange itself (timeouts, retries, Retry-After, the paging
 * and error protocol of docs/providers.md 1.5) is src/reconcile/client.ts; this part says where to
 * call, how to sign, and what an answer's item is. `C` is its parsed credentials.
 * At most one sender declares one: reconciliation runs and windows are keyed by account alone
 * (a test in test/providers/registry.test.ts holds the registry to it).
 */
export interface ProviderApi<C = unknown, S = unknown, N extends ProviderName = ProviderName> {
	/** The one resource type its list pages and its item URL returns. */
	type: string;
	/**
	 * The variable listing the accounts reconciled (comma-separated): each has its own list, and a
	 * resource id is unique only within one. Reconciliation is off while it is empty.
	 */
	accountsVariable: ProviderVariables[N];
	/**
	 * The variable holding the private key whose public key is registered with the sender, when
	 * requests are signed with one (`npm run public-key` prints it; src/crypto/access-signature.ts).
	 */
	privateKeyVariable?: ProviderVariables[N];
	/** Its base URL and credentials from its variables, or what is wrong (a failed run, never a crash). */
	credentials(env: ProviderEnv<N>): Result<{ value: C }, { error: string }>;
	/**
	 * An account's list URL (paging parameters are added by the client). Encode what goes into a
	 * path segment (`encodeURIComponent`); the client refuses an empty, `.` or `..` account or id.
	 */
	listUrl(credentials: C, account: string): URL;
	/** One resource's URL (encode the account and id, as for `listUrl`). */
	itemUrl(credentials: C, account: string, id: string): URL;
	/** The headers of one request attempt, signed afresh each time (a reused request id is a replay). */
	signedHeaders(credentials: C, method: string, url: URL, nowMs: number): Promise<Headers>;
	/**
	 * Whether its resource ids are unique only within an account, so a resource is keyed by its
	 * account as its wallet (the template's primary sender: true). False: ids are unique across
	 * accounts and resources carry no wallet; then a resource is asked of the only listed account
	 * (with several listed, old events are not refreshed and the refresh route needs ?wallet=).
	 * A stored resource that names no wallet is never asked of a guessed account when true: asked
	 * of the wrong one, its answer would be keyed apart and become a second resource.
	 */
	accountScoped: boolean;
	/**
	 * An item of its answers as a snapshot of `account`'s resource, or null when it is not one. It
	 * must key the resource exactly as `parse` does for the same resource (type, id, wallet), or one
	 * resource becomes two and its effects fire twice: the account as its wallet when
	 * `accountScoped`, else wallet null, as its webhooks do.
	 */
	snapshot(item: unknown, account: string): ResourceSnapshot | null;
	/** Webhook events older than this are checked against the API before they apply; null: never. */
	refreshAfterMs(settings: S): number | null;
}

/** One state of one simulated resource, as the tools describe it before a sender shapes it. */
export interface SampleState {
	id: string;
	version: number;
	status: string;
	amount: number;
	currency: string;
	direction: "IN" | "OUT";
	/** Event time (ms): increases with the version. */
	at: number;
}

/**
 * How a sender signs, as data. The Node tools hold one signer per kind (scripts/sim/signing.ts),
 * so a provider that signs in a known way needs no change there; the Worker never reads this.
 * - `timestamp-hex`: `header: t=<timestamp>,v1=<hex HMAC-SHA256 of "{timestamp}.{body}">`, the
 *   timestamp in ms or s, also sent alone in `timestampHeader` when set; the key is the secret's
 *   UTF-8 bytes, or its base64-decoded bytes when `encodingVariable` says `base64`.
 * - `body-hex`: `header: <hex HMAC-SHA256 of the body>`, keyed by the secret's UTF-8 bytes.
 * - `id-timestamp-base64`: the webhook-id, webhook-timestamp and webhook-signature headers of
 *   docs/providers.md 4 (`v1,<base64>` over `{id}.{timestamp}.{body}`, secret `whsec_<base64>`).
 */
export type SigningScheme =
	| { kind: "timestamp-hex"; header: string; unit: "ms" | "s"; timestampHeader?: string; encodingVariable?: string }
	| { kind: "body-hex"; header: string }
	| { kind: "id-timestamp-base64" };

/** When a sender redelivers (seconds after each attempt) and whether a 4xx ends it (docs/providers.md). */
export interface RetrySchedule {
	delays: readonly number[];
	/** The spread applied to each delay: [low, high] factors. */
	jitter: readonly [number, number];
	fourXxPermanent: boolean;
	timeoutMs: number;
}

/** A sender as the tools play it: data and small pure functions the Worker carries but never calls. */
export interface SenderModel {
	signing: SigningScheme;
	retries: RetrySchedule;
	/** The headers it sends besides the signature (its attempt counter or id). */
	attemptHeaders(messageId: string, attempt: number): Record<string, string>;
	/** Its body announcing state `s` of one resource. */
	sample(messageId: string, s: SampleState, attempt: number): string;
	/** The resource type and version the receiver must hold once state `s` is applied. */
	expected(s: SampleState): { type: string; version: number };
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
 * Decision (docs/providers.md 5): for senders that publish no final set, these
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
