/**
 * The one place that reads environment variables. Everything else receives a parsed `Config`.
 * Bindings are typed here too, so `Env` is the whole contract between wrangler.toml and the code.
 */
import { parsePrivateKey, type SignatureFormat } from "./crypto/access-signature";
import { type Cidr, parseCidr } from "./ingress/cidr";
import type { QueueMessage, ReconcileJob } from "./queue/messages";

export interface Env {
	DB: D1Database;
	EVENTS: Queue<QueueMessage>;
	RECONCILE: Queue<ReconcileJob>;
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

export type ProviderName = "bloobank" | "bold" | "pazy" | "standard";
export const PROVIDER_NAMES: readonly ProviderName[] = ["bloobank", "bold", "pazy", "standard"];

export interface Config {
	/** Secrets per provider; an empty list means the provider is off (its route answers 404). */
	secrets: Record<ProviderName, readonly string[]>;
	bloobankSecretEncoding: "utf8" | "base64";
	boldSupportedMajors: readonly number[];
	toleranceSeconds: number;
	maxBodyBytes: number;
	webhookPathToken: string | null;
	adminToken: string | null;
	alertWebhookUrl: string | null;
	sweepStaleSeconds: number;
	retentionDays: number;
	dedupeRetentionDays: number;
	/** null: no allow-list. */
	allowedSourceCidrs: readonly Cidr[] | null;
}

export class ConfigError extends Error {
	override name = "ConfigError";
}

function list(value: string | undefined): string[] {
	if (!value) return [];
	return value
		.split(",")
		.map((s) => s.trim())
		.filter((s) => s.length > 0);
}

function positiveInt(name: string, value: string | undefined, fallback: number): number {
	if (value === undefined || value.trim() === "") return fallback;
	const n = Number(value);
	if (!Number.isSafeInteger(n) || n <= 0) throw new ConfigError(`${name} must be a positive integer`);
	return n;
}

function optional(value: string | undefined): string | null {
	return value && value.trim() !== "" ? value.trim() : null;
}

function parseCidrList(value: string | undefined): Cidr[] | null {
	const entries = list(value);
	if (entries.length === 0) return null;
	return entries.map((entry) => {
		const cidr = parseCidr(entry);
		if (!cidr) throw new ConfigError(`ALLOWED_SOURCE_CIDRS: "${entry}" is not an IPv4 or IPv6 CIDR`);
		return cidr;
	});
}

export function parseConfig(env: Env): Config {
	const encoding = (env.BLOOBANK_SECRET_ENCODING ?? "utf8").trim().toLowerCase();
	if (encoding !== "utf8" && encoding !== "base64") {
		throw new ConfigError("BLOOBANK_SECRET_ENCODING must be utf8 or base64");
	}
	const majors = list(env.BOLD_SUPPORTED_MAJOR_VERSIONS ?? "1").map((m) => {
		const n = Number(m);
		if (!Number.isSafeInteger(n) || n < 0) throw new ConfigError("BOLD_SUPPORTED_MAJOR_VERSIONS must list integers");
		return n;
	});
	return {
		secrets: {
			bloobank: list(env.BLOOBANK_WEBHOOK_SECRETS),
			bold: list(env.BOLD_WEBHOOK_SECRETS),
			pazy: list(env.PAZY_WEBHOOK_SECRETS),
			standard: list(env.STANDARD_WEBHOOK_SECRETS),
		},
		bloobankSecretEncoding: encoding,
		boldSupportedMajors: majors,
		toleranceSeconds: positiveInt("SIGNATURE_TOLERANCE_SECONDS", env.SIGNATURE_TOLERANCE_SECONDS, 300),
		maxBodyBytes: positiveInt("MAX_BODY_BYTES", env.MAX_BODY_BYTES, 1024 * 1024),
		webhookPathToken: optional(env.WEBHOOK_PATH_TOKEN),
		adminToken: optional(env.ADMIN_TOKEN),
		alertWebhookUrl: optional(env.ALERT_WEBHOOK_URL),
		sweepStaleSeconds: positiveInt("SWEEP_STALE_SECONDS", env.SWEEP_STALE_SECONDS, 300),
		retentionDays: positiveInt("RETENTION_DAYS", env.RETENTION_DAYS, 30),
		dedupeRetentionDays: positiveInt("DEDUPE_RETENTION_DAYS", env.DEDUPE_RETENTION_DAYS, 90),
		allowedSourceCidrs: parseCidrList(env.ALLOWED_SOURCE_CIDRS),
	};
}

const cache = new WeakMap<Env, Config>();

/** Parsed once per env object (an isolate reuses it across requests). */
export function getConfig(env: Env): Config {
	let config = cache.get(env);
	if (!config) {
		config = parseConfig(env);
		cache.set(env, config);
	}
	return config;
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
	let protocol = "";
	try {
		protocol = new URL(baseUrl).protocol;
	} catch {
		// reported below
	}
	if (protocol !== "https:" && protocol !== "http:") return fail("BLOOBANK_API_BASE_URL is not an http(s) URL");
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
