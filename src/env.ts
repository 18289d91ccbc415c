/**
 * The one place that reads environment variables. Everything else receives a parsed `Config`.
 * The bindings' types live in ./bindings.ts.
 */

import type { Env, EnvVar } from "./bindings";
import { type Config, ConfigError, list, optional, outboundUrl, positiveInt, type WebhookConfig } from "./config";
import { MAX_SHARDS, type Shards, shardsFrom } from "./db/shards";
import { type Cidr, parseCidr } from "./ingress/cidr";
import { PROVIDER_VARIABLES, providers, reconciledProvider, type UnlistedProviderVariables } from "./providers";
import type { ProviderName, ProviderVariable } from "./providers/model";
import type { Provider, ProviderApi } from "./providers/types";
import type { Result } from "./result";

export type { Env } from "./bindings";
export { type Config, ConfigError, isLoopbackHost, outboundUrl, type WebhookConfig } from "./config";

/** The receiver's own variables (each sender's are in its provider file). */
const RECEIVER_VARIABLES = [
	"SIGNATURE_TOLERANCE_SECONDS",
	"MAX_BODY_BYTES",
	"WEBHOOK_PATH_TOKEN",
	"ADMIN_TOKEN",
	"ALERT_WEBHOOK_URL",
	"SWEEP_STALE_SECONDS",
	"RETENTION_DAYS",
	"DEDUPE_RETENTION_DAYS",
	"ALLOWED_SOURCE_CIDRS",
	"DB_SHARDS",
	"RECONCILE_FILTER_FIELD",
	"RECONCILE_LOOKBACK_HOURS",
] as const satisfies readonly EnvVar[];

/** Every variable Env reads: a `[vars]` key of wrangler.toml must be one of them (test/wiring). */
export const ENV_VAR_NAMES: readonly ((typeof RECEIVER_VARIABLES)[number] | ProviderVariable)[] = [
	...RECEIVER_VARIABLES,
	...PROVIDER_VARIABLES,
];

/**
 * never while ENV_VAR_NAMES lists every string variable of Env: the receiver's, and each sender's
 * as its `variables` lists them (src/providers/index.ts UnlistedProviderVariables).
 */
export type UnlistedEnvVars = Exclude<EnvVar, (typeof ENV_VAR_NAMES)[number]> | UnlistedProviderVariables;

/** Bearer and path tokens are guessable below this length (docs/design.md, configuration). */
export const MIN_TOKEN_LENGTH = 32;

function token(name: string, value: string | undefined): string | null {
	const t = optional(value);
	if (t !== null && t.length < MIN_TOKEN_LENGTH)
		throw new ConfigError(name, `must be at least ${MIN_TOKEN_LENGTH} characters`);
	return t;
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

/** The defaults of the sweep's settings (one place: parseConfig and alertOnlyConfig read them). */
const DEFAULTS = { sweepStaleSeconds: 300, retentionDays: 30, dedupeRetentionDays: 90 } as const;

export function parseConfig(env: Env): Config {
	const alert = optional(env.ALERT_WEBHOOK_URL);
	return {
		providerSettings: Object.fromEntries(Object.values(providers).map((p) => [p.name, p.settings(env)])) as Record<
			ProviderName,
			unknown
		>,
		alertWebhookUrl: alert === null ? null : outboundUrl("ALERT_WEBHOOK_URL", alert),
		sweepStaleSeconds: positiveInt("SWEEP_STALE_SECONDS", env.SWEEP_STALE_SECONDS, DEFAULTS.sweepStaleSeconds),
		retentionDays: positiveInt("RETENTION_DAYS", env.RETENTION_DAYS, DEFAULTS.retentionDays),
		dedupeRetentionDays: positiveInt("DEDUPE_RETENTION_DAYS", env.DEDUPE_RETENTION_DAYS, DEFAULTS.dedupeRetentionDays),
	};
}

/** The development admin token of .dev.vars.example: anyone can read it (as every provider's publishedSecrets). */
const PUBLISHED_ADMIN_TOKEN = "dev-admin-token-change-me-0123456789abcdef0123";

/**
 * Values anyone can read: the development values in .dev.vars.example and the test secrets of a
 * sender's documentation (each provider's publishedSecrets). Keep in sync with .dev.vars.example.
 */
export const PUBLISHED_VALUES: ReadonlySet<string> = new Set([
	PUBLISHED_ADMIN_TOKEN,
	...Object.values(providers).flatMap((p: Provider) => p.publishedSecrets),
]);

export function parseWebhookConfig(env: Env): WebhookConfig {
	const base = parseConfig(env);
	const published: string[] = [];
	const keys = {} as Record<ProviderName, Uint8Array[]>;
	// The registry, not a list of names: a provider added there is configured here too.
	for (const provider of Object.values(providers)) {
		const name = provider.name;
		const variable = provider.secretsVariable;
		const secrets = list(env[variable]);
		keys[name] = secrets.map((secret) => {
			const key = provider.keyFromSecret(secret, env);
			// A secret that does not decode is ours to fix: never a 401, which a sender may never retry
			// (docs/providers.md 1.1, 6).
			if (key === null || key.byteLength === 0) throw new ConfigError(variable, "a secret does not decode");
			return key;
		});
		// Compared as keys, not strings: another spelling of a published secret (no `whsec_`, URL-safe
		// base64) is still the published key.
		const publishedKeys = [...PUBLISHED_VALUES].map((v) => keyOrNull(provider, v, env));
		if (keys[name].some((k) => publishedKeys.some((p) => p !== null && sameBytes(k, p)))) published.push(variable);
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

function keyOrNull(provider: Provider, secret: string, env: Env): Uint8Array | null {
	try {
		return provider.keyFromSecret(secret, env);
	} catch {
		return null;
	}
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
	return a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);
}

/**
 * When `Config` itself does not parse, the sweep still evaluates the alerts (`config_error` among
 * them): this is enough for that, with ALERT_WEBHOOK_URL if that one variable parses.
 */
export function alertOnlyConfig(env: Env): Config {
	let alertWebhookUrl: string | null = null;
	try {
		const alert = optional(env.ALERT_WEBHOOK_URL);
		alertWebhookUrl = alert === null ? null : outboundUrl("ALERT_WEBHOOK_URL", alert);
	} catch {
		// The alert target is what is broken: the log line is all there is.
	}
	return { providerSettings: {} as Config["providerSettings"], alertWebhookUrl, ...DEFAULTS };
}

/**
 * DB_SHARDS: D1 binding names, DB first: the home shard (src/db/shards.ts). Default `DB`.
 * A name that is not a D1 binding is a configuration error like any other: 503 and an alert,
 * never a delivery written to the wrong database.
 */
export function parseShards(env: Env): Shards {
	const names = list(env.DB_SHARDS);
	const bindings = names.length === 0 ? ["DB"] : names;
	if (new Set(bindings).size !== bindings.length) throw new ConfigError("DB_SHARDS", "lists a binding twice");
	// The home shard is DB: the tables that are not per resource stay where one database keeps them.
	if (bindings[0] !== "DB") throw new ConfigError("DB_SHARDS", "must list DB first (the home shard)");
	if (bindings.length > MAX_SHARDS) throw new ConfigError("DB_SHARDS", `lists more than ${MAX_SHARDS} bindings`);
	const all = env as unknown as Record<string, unknown>;
	return shardsFrom(
		bindings.map((name) => {
			const db = all[name] as Partial<D1Database> | undefined;
			if (typeof db?.prepare !== "function" || typeof db.batch !== "function")
				throw new ConfigError("DB_SHARDS", `${name} is not a D1 binding`);
			return db as D1Database;
		}),
		bindings.join(","),
	);
}

const shardsCache = new WeakMap<Env, Shards>();

/** Parsed once per env object. Throws ConfigError. */
export function getShards(env: Env): Shards {
	return cached(shardsCache, env, parseShards);
}

/** The variable at fault, or null when the whole configuration parses (`/healthz`, the sweep's alert). */
export function configProblem(env: Env): ConfigError | null {
	try {
		getWebhookConfig(env);
		getShards(env);
		return null;
	} catch (err) {
		if (err instanceof ConfigError) return err;
		throw err;
	}
}

/**
 * Reconciliation: the sender whose API is called (`api` in its file, src/providers/types.ts), its
 * parsed credentials, its accounts, and the receiver's own settings. Parsed apart from the rest,
 * because bad credentials must fail a run, not every request.
 */
export interface ReconcileConfig {
	provider: Provider & { api: ProviderApi };
	api: ProviderApi;
	credentials: unknown;
	wallets: readonly string[];
	filterField: string;
	lookbackHours: number;
}

/** The accounts listed for reconciliation (none when no sender has an API). */
function reconciledAccounts(env: Env): string[] {
	const p = reconciledProvider();
	return p ? list((env as unknown as Record<string, string | undefined>)[p.api.accountsVariable]) : [];
}

/** Reconciliation is off when no account is listed: the daily cron then does nothing. */
export function reconcileEnabled(env: Env): boolean {
	return reconciledAccounts(env).length > 0;
}

/** Why reconciliation is off, in a few words (the console and the cron's log). */
export function reconcileOffReason(): string {
	const p = reconciledProvider();
	return p ? `${p.api.accountsVariable} is empty` : "no sender declares an API";
}

export type ReconcileConfigResult = Result<{ config: ReconcileConfig }, { error: string }>;

export function parseReconcileConfig(env: Env): ReconcileConfigResult {
	const fail = (error: string): ReconcileConfigResult => ({ ok: false, error });
	const provider = reconciledProvider();
	if (!provider) return fail(reconcileOffReason());
	const credentials = provider.api.credentials(env);
	if (!credentials.ok) return fail(credentials.error);
	const wallets = reconciledAccounts(env);
	if (wallets.length === 0) return fail(reconcileOffReason());
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
		config: {
			provider,
			api: provider.api,
			credentials: credentials.value,
			wallets,
			filterField,
			lookbackHours,
		},
	};
}
