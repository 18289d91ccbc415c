/**
 * The Worker's bindings and variables: the whole contract between wrangler.toml and the code.
 * Types only. Variables are read (and checked) in ./env.ts, nowhere else. src/env.wrangler-check.ts
 * checks `Env` against the types `npm run types` generates from wrangler.toml.
 */
import type { QueueMessage, ReconcileJob } from "./queue/messages";

export interface Env {
	/** The home shard: every table; with DB_SHARDS, the per-resource ones are spread (src/db/shards.ts). */
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
	BLOOBANK_REFRESH_AFTER_SECONDS?: string;
	/** D1 binding names of the shards, the first being the home shard (src/db/shards.ts); default `DB`. */
	DB_SHARDS?: string;
}

/** The names of Env's string variables (not its bindings). */
export type EnvVar = { [K in keyof Env]-?: Env[K] extends string | undefined ? K : never }[keyof Env];
