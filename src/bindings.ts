/**
 * The Worker's bindings and variables: the whole contract between wrangler.toml and the code.
 * Types only. Variables are read (and checked) in ./env.ts, nowhere else. src/env.wrangler-check.ts
 * checks `Env` against the types `npm run types` generates from wrangler.toml.
 */
import type { ProviderVariable } from "./providers/model";
import type { QueueMessage, ReconcileJob } from "./queue/messages";

/** The senders' own variables (secrets and settings), as each provider file declares them. */
type ProviderVariables = { [V in ProviderVariable]?: string };

export interface Env extends ProviderVariables {
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

	// The receiver's own variables; each sender's are in its provider file.
	SIGNATURE_TOLERANCE_SECONDS?: string;
	MAX_BODY_BYTES?: string;
	WEBHOOK_PATH_TOKEN?: string;
	ADMIN_TOKEN?: string;
	ALERT_WEBHOOK_URL?: string;
	SWEEP_STALE_SECONDS?: string;
	RETENTION_DAYS?: string;
	DEDUPE_RETENTION_DAYS?: string;
	ALLOWED_SOURCE_CIDRS?: string;
	/** D1 binding names of the shards, the first being the home shard (src/db/shards.ts); default `DB`. */
	DB_SHARDS?: string;
	/** Reconciliation's window field and look-back (src/reconcile/); the sender's API is its `api`. */
	RECONCILE_FILTER_FIELD?: string;
	RECONCILE_LOOKBACK_HOURS?: string;
}

/** The names of Env's string variables (not its bindings). */
export type EnvVar = { [K in keyof Env]-?: Env[K] extends string | undefined ? K : never }[keyof Env];
