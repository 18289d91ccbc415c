/**
 * The one place that reads environment variables. Everything else receives a parsed `Config`.
 * Bindings are typed here too, so `Env` is the whole contract between wrangler.toml and the code.
 */
import { parsePrivateKey, type SignatureFormat } from "./crypto/access-signature";
import { base64ToBytesLenient, utf8 } from "./crypto/encoding";
import { type Cidr, parseCidr } from "./ingress/cidr";
import type { QueueMessage, ReconcileJob } from "./queue/messages";

export interface Env {
	DB: D1Database;
	EVENTS: Queue<QueueMessage>;
	RECONCILE: Queue<ReconcileJob>;
	/** Optional: R2 bucket for the raw bodies of settled deliveries (src/sweep/archive.ts). */
	ARCHIVE?: R2Bucket;
	/** Optional: Workers Analytics Engine dataset, one data point per webhook request. */
	WEBHOOK_ANALYTICS?: AnalyticsEngineDataset;
	/** Optional: Workers Rate Limiting binding, keyed per client address (src/ingress/limit.ts). */
	WEBHOOK_RATE_LIMITER?: RateLimit;

	BLOOBANK_WEBHOOK_SECRETS?: string;
	BLOOBANK_SECRET_ENCODING?: string;
	BOLD_WEBHOOK_SECRETS?: string;
	BOLD_SUPPORTED_MAJOR_VERSIONS?: string;
	PAZY_WEBHOOK_SECRETS?: string;
	STANDARD_WEBHOOK_SECRETS?: string;
	SIGNATURE_TOLERANCE_SECONDS?: string;
	MAX_BODY_BYTES?: string;
	WEBHOOK_PATH_TOKEN?: string;
	ADMIN_TOKEN?: string;
	BLOOBANK_API_BASE_URL?: string;
	BLOOBANK_ACCESS_KEY?: string;
	BLOOBANK_PRIVATE_KEY?: string;
	BLOOBANK_SIGNATURE_FORMAT?: string;
	BLOOBANK_WALLETS?: string;
	RECONCILE_FILTER_FIELD?: string;
	RECONCILE_LOOKBACK_HOURS?: string;
	ALERT_WEBHOOK_URL?: string;
	SWEEP_STALE_SECONDS?: string;
	RETENTION_DAYS?: string;
	DEDUPE_RETENTION_DAYS?: string;
	ALLOWED_SOURCE_CIDRS?: string;
}

/** Every variable Env reads: a `[vars]` key of wrangler.toml must be one of them (test/wiring). */
export const ENV_VAR_NAMES = [
	"BLOOBANK_WEBHOOK_SECRETS",
	"BLOOBANK_SECRET_ENCODING",
	"BOLD_WEBHOOK_SECRETS",
	"BOLD_SUPPORTED_MAJOR_VERSIONS",
	"PAZY_WEBHOOK_SECRETS",
	"STANDARD_WEBHOOK_SECRETS",
	"SIGNATURE_TOLERANCE_SECONDS",
	"MAX_BODY_BYTES",
	"WEBHOOK_PATH_TOKEN",
	"ADMIN_TOKEN",
	"BLOOBANK_API_BASE_URL",
	"BLOOBANK_ACCESS_KEY",
	"BLOOBANK_PRIVATE_KEY",
	"BLOOBANK_SIGNATURE_FORMAT",
	"BLOOBANK_WALLETS",
	"RECONCILE_FILTER_FIELD",
	"RECONCILE_LOOKBACK_HOURS",
	"ALERT_WEBHOOK_URL",
	"SWEEP_STALE_SECONDS",
	"RETENTION_DAYS",
	"DEDUPE_RETENTION_DAYS",
	"ALLOWED_SOURCE_CIDRS",
] as const satisfies readonly (keyof Env)[];
type StringVars = { [K in keyof Env]-?: NonNullable<Env[K]> extends string ? K : never }[keyof Env];
/** never while ENV_VAR_NAMES lists every string variable of Env. */
export type UnlistedEnvVars = Exclude<StringVars, (typeof ENV_VAR_NAMES)[number]>;

export type ProviderName = "bloobank" | "bold" | "pazy" | "standard";
export const PROVIDER_NAMES: readonly ProviderName[] = ["bloobank", "bold", "pazy", "standard"];

/** Each sender's secrets variable: comma-separated, every one tried (rotation). */
export const SECRETS_VARIABLES = {
	bloobank: "BLOOBANK_WEBHOOK_SECRETS",
	bold: "BOLD_WEBHOOK_SECRETS",
	pazy: "PAZY_WEBHOOK_SECRETS",
	standard: "STANDARD_WEBHOOK_SECRETS",
} as const satisfies Record<ProviderName, keyof Env>;

/**
 * What everything but ingress reads: the consumer, the sweep, effects. No secret is in it, so a
 * mistyped webhook secret cannot stop the queue consumer (docs/design.md, configuration).
 */
export interface Config {
	boldSupportedMajors: readonly number[];
	alertWebhookUrl: string | null;
	sweepStaleSeconds: number;
	retentionDays: number;
	dedupeRetentionDays: number;
}

/** What ingress and the admin API read on top of `Config`. */
export interface WebhookConfig extends Config {
	/** HMAC keys per provider, decoded once here; an empty list means the provider is not configured. */
	keys: Record<ProviderName, readonly Uint8Array[]>;
	toleranceSeconds: number;
	maxBodyBytes: number;
	webhookPathToken: string | null;
	adminToken: string | null;
	/** null: no allow-list. */
	allowedSourceCidrs: readonly Cidr[] | null;
	/**
	 * Variables that hold a value published in this repository or a spec (.dev.vars.example, the
	 * Standard Webhooks test secret): refused unless the request comes to localhost.
	 */
	publishedValues: readonly string[];
}

/** A configuration problem, named by its variable (never its value). */
export class ConfigError extends Error {
	override name = "ConfigError";
	constructor(
		readonly variable: string,
		message: string,
	) {
		super(`${variable}: ${message}`);
	}
}

function list(value: string | undefined): string[] {
	if (!value) return [];
	return value
		.split(",")
		.map((s) => s.trim())
		.filter((s) => s.length > 0);
}

function positiveInt(name: string, value: string | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
	if (value === undefined || value.trim() === "") return fallback;
	const n = Number(value);
	if (!Number.isSafeInteger(n) || n <= 0) throw new ConfigError(name, "must be a positive integer");
	if (n > max) throw new ConfigError(name, `must be at most ${max}`);
	return n;
}

function optional(value: string | undefined): string | null {
	return value && value.trim() !== "" ? value.trim() : null;
}

/** Bearer and path tokens are guessable below this length (docs/design.md, configuration). */
export const MIN_TOKEN_LENGTH = 32;

function token(name: string, value: string | undefined): string | null {
	const t = optional(value);
	if (t !== null && t.length < MIN_TOKEN_LENGTH)
		throw new ConfigError(name, `must be at least ${MIN_TOKEN_LENGTH} characters`);
	return t;
}

/** An http(s) URL for outbound calls: https only, except plain http to loopback (local tests). */
export function outboundUrl(name: string, value: string): string {
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		throw new ConfigError(name, "is not a URL");
	}
	if (url.protocol === "https:") return value;
	if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return value;
	throw new ConfigError(name, "must be an https URL (plain http only to loopback)");
}

export function isLoopbackHost(hostname: string): boolean {
	return hostname === "localhost" || hostname === "[::1]" || hostname === "::1" || /^127(\.\d{1,3}){3}$/.test(hostname);
}

function parseCidrList(value: string | undefined): Cidr[] | null {
	const entries = list(value);
	if (entries.length === 0) return null;
	return entries.map((entry) => {
		const cidr = parseCidr(entry);
		if (!cidr) throw new ConfigError("ALLOWED_SOURCE_CIDRS", `"${entry}" is not an IPv4 or IPv6 CIDR`);
		return cidr;
	});
}

/**
 * D1 refuses a string or row over 2,000,000 bytes; the raw body shares its row with the
 * delivery's other columns, so the cap leaves room for them.
 */
export const MAX_BODY_BYTES_LIMIT = 1_900_000;
/** A wider window only widens the replay window of a captured request. */
export const MAX_TOLERANCE_SECONDS = 3_600;

export function parseConfig(env: Env): Config {
	const majors = list(env.BOLD_SUPPORTED_MAJOR_VERSIONS ?? "1").map((m) => {
		const n = Number(m);
		if (!Number.isSafeInteger(n) || n < 0) throw new ConfigError("BOLD_SUPPORTED_MAJOR_VERSIONS", "must list integers");
		return n;
	});
	const alert = optional(env.ALERT_WEBHOOK_URL);
	return {
		boldSupportedMajors: majors,
		alertWebhookUrl: alert === null ? null : outboundUrl("ALERT_WEBHOOK_URL", alert),
		sweepStaleSeconds: positiveInt("SWEEP_STALE_SECONDS", env.SWEEP_STALE_SECONDS, 300),
		retentionDays: positiveInt("RETENTION_DAYS", env.RETENTION_DAYS, 30),
		dedupeRetentionDays: positiveInt("DEDUPE_RETENTION_DAYS", env.DEDUPE_RETENTION_DAYS, 90),
	};
}

/**
 * Values anyone can read: the development values in .dev.vars.example and the Standard Webhooks
 * spec's test secret. Keep in sync with .dev.vars.example (a test checks it).
 */
export const PUBLISHED_VALUES: ReadonlySet<string> = new Set([
	"dev-bloobank-secret-change-me-0123456789abcdef",
	"dev-admin-token-change-me-0123456789abcdef0123",
	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
]);

export function parseWebhookConfig(env: Env): WebhookConfig {
	const base = parseConfig(env);
	const encoding = (env.BLOOBANK_SECRET_ENCODING ?? "utf8").trim().toLowerCase();
	if (encoding !== "utf8" && encoding !== "base64") {
		throw new ConfigError("BLOOBANK_SECRET_ENCODING", "must be utf8 or base64");
	}
	const published: string[] = [];
	const keys = {} as Record<ProviderName, Uint8Array[]>;
	for (const provider of PROVIDER_NAMES) {
		const variable = SECRETS_VARIABLES[provider];
		const secrets = list(env[variable]);
		if (secrets.some((s) => PUBLISHED_VALUES.has(s))) published.push(variable);
		keys[provider] = secrets.map((secret) => {
			const key = decodeSecret(provider, secret, encoding);
			// A secret that does not decode is ours to fix: never a 401, which BlooBank never retries
			// (docs/providers.md 1.2).
			if (key === null || key.byteLength === 0) throw new ConfigError(variable, "a secret does not decode");
			return key;
		});
	}
	const adminToken = token("ADMIN_TOKEN", env.ADMIN_TOKEN);
	if (adminToken !== null && PUBLISHED_VALUES.has(adminToken)) published.push("ADMIN_TOKEN");
	const pathToken = token("WEBHOOK_PATH_TOKEN", env.WEBHOOK_PATH_TOKEN);
	if (pathToken !== null && PUBLISHED_VALUES.has(pathToken)) published.push("WEBHOOK_PATH_TOKEN");
	return {
		...base,
		keys,
		toleranceSeconds: positiveInt(
			"SIGNATURE_TOLERANCE_SECONDS",
			env.SIGNATURE_TOLERANCE_SECONDS,
			300,
			MAX_TOLERANCE_SECONDS,
		),
		maxBodyBytes: positiveInt("MAX_BODY_BYTES", env.MAX_BODY_BYTES, 1024 * 1024, MAX_BODY_BYTES_LIMIT),
		webhookPathToken: pathToken,
		adminToken,
		allowedSourceCidrs: parseCidrList(env.ALLOWED_SOURCE_CIDRS),
		publishedValues: published,
	};
}

/**
 * The HMAC key of one configured secret (docs/providers.md 1.2 and 4): BlooBank's string as
 * shown unless BLOOBANK_SECRET_ENCODING=base64; Standard Webhooks' base64 after `whsec_`; Bold's
 * and Pazy's string as shown. Base64 is accepted padded, unpadded or URL-safe.
 */
export function decodeSecret(
	provider: ProviderName,
	secret: string,
	bloobankEncoding: "utf8" | "base64",
): Uint8Array | null {
	switch (provider) {
		case "bloobank":
			return bloobankEncoding === "base64" ? base64ToBytesLenient(secret) : utf8(secret);
		case "standard":
			return base64ToBytesLenient(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
		case "bold":
		case "pazy":
			return utf8(secret);
	}
}

const configCache = new WeakMap<Env, Config>();
const webhookCache = new WeakMap<Env, WebhookConfig>();

function cached<T>(cache: WeakMap<Env, T>, env: Env, parse: (env: Env) => T): T {
	let value = cache.get(env);
	if (value === undefined) {
		value = parse(env);
		cache.set(env, value);
	}
	return value;
}

/** Parsed once per env object (an isolate reuses it across requests). Throws ConfigError. */
export function getConfig(env: Env): Config {
	return cached(configCache, env, parseConfig);
}

/** Parsed once per env object. Throws ConfigError. */
export function getWebhookConfig(env: Env): WebhookConfig {
	return cached(webhookCache, env, parseWebhookConfig);
}

/** The variable at fault, or null when the whole configuration parses (`/healthz`, the sweep's alert). */
export function configProblem(env: Env): ConfigError | null {
	try {
		getWebhookConfig(env);
		return null;
	} catch (err) {
		if (err instanceof ConfigError) return err;
		throw err;
	}
}

/** Reconciliation settings: parsed apart, because bad credentials must fail a run, not every request. */
export interface ReconcileConfig {
	baseUrl: string;
	accessKey: string;
	privateKey: Uint8Array;
	signatureFormat: SignatureFormat;
	wallets: readonly string[];
	filterField: string;
	lookbackHours: number;
}

/** Reconciliation is off when no wallet is listed: the daily cron then does nothing. */
export function reconcileEnabled(env: Env): boolean {
	return list(env.BLOOBANK_WALLETS).length > 0;
}

export type ReconcileConfigResult = { ok: true; config: ReconcileConfig } | { ok: false; error: string };

export function parseReconcileConfig(env: Env): ReconcileConfigResult {
	const fail = (error: string): ReconcileConfigResult => ({ ok: false, error });
	const baseUrl = (env.BLOOBANK_API_BASE_URL ?? "https://txengine.bloobank.com/txengine/v1").trim().replace(/\/+$/, "");
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
	const wallets = list(env.BLOOBANK_WALLETS);
	if (wallets.length === 0) return fail("BLOOBANK_WALLETS is empty");
	// The field name goes into the provider's filter expression: a plain identifier only.
	const filterField = (env.RECONCILE_FILTER_FIELD ?? "updatedAt").trim();
	if (!/^[A-Za-z_][A-Za-z0-9_.]{0,63}$/.test(filterField)) return fail("RECONCILE_FILTER_FIELD must be a field name");
	let lookbackHours: number;
	try {
		lookbackHours = positiveInt("RECONCILE_LOOKBACK_HOURS", env.RECONCILE_LOOKBACK_HOURS, 48);
	} catch (err) {
		return fail((err as Error).message);
	}
	return {
		ok: true,
		config: { baseUrl, accessKey, privateKey, signatureFormat: format, wallets, filterField, lookbackHours },
	};
}
