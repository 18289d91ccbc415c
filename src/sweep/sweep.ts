/**
 * The frequent cron. It does bounded catch-up work only:
 * - re-send deliveries left `received` (their send failed or the worker died) or `enqueued` but
 *   never applied, once older than SWEEP_STALE_SECONDS (docs/design.md invariant 3);
 * - retry effects whose execution failed or whose executor died (docs/design.md invariant 6),
 *   until EFFECT_MAX_ATTEMPTS marks them `failed` (src/effects/executor.ts);
 * - move settled bodies to the R2 archive when it is bound (archive.ts);
 * - prune expired bodies, dedupe keys and rejection records (retention.ts);
 * - evaluate the operational alerts (alerts.ts), the database's size among them.
 */

import { releaseSendTokens, takeStuckDeliveries } from "../db/deliveries";
import { beat } from "../db/heartbeats";
import { fanOut, layoutMismatch, type Shard, type Shards } from "../db/shards";
import { EFFECT_SWEEP_LIMIT, retryPendingEffects } from "../effects/executor";
import { type Config, configProblem, type Env, getShards } from "../env";
import { SEND_LEASE_MS } from "../ingress/inbox";
import { errorMessage, log } from "../log";
import { sendPointers } from "../queue/enqueue";
import { type AlertTransition, readSignals, runAlerts } from "./alerts";
import { ARCHIVE_CHUNK, type ArchiveReport, archiveSettledBodies } from "./archive";
import { pruneExpired, type RetentionReport } from "./retention";

export const SWEEP_BATCH = 100;

export interface SweepReport {
	resent: number;
	effectsDone: number;
	effectsFailed: number;
	archive: ArchiveReport | null;
	retention: RetentionReport | null;
	alerts: AlertTransition[];
	/** The database's size as the alerts saw it (D1's meta.size_after), logged with the report. */
	databaseBytes: number | null;
}

/** In every shard, at most `limit` rows each. */
export async function resendStuckDeliveries(
	env: Env,
	config: Config,
	nowMs: number,
	limit = SWEEP_BATCH,
): Promise<number> {
	const counts = await fanOut(getShards(env), (shard) => resendInShard(env, config, shard, nowMs, limit));
	return counts.reduce((a, b) => a + b, 0);
}

async function resendInShard(env: Env, config: Config, shard: Shard, nowMs: number, limit: number): Promise<number> {
	const token = crypto.randomUUID();
	// `received` rows first: nothing but the sweep (or a provider retry) will ever send them, while
	// `enqueued` rows past the threshold are most often only waiting in a queue backlog and must
	// not crowd them out (docs/design.md invariant 3).
	const results = await takeStuckDeliveries(
		shard.db,
		token,
		nowMs,
		nowMs - config.sweepStaleSeconds * 1000,
		nowMs - SEND_LEASE_MS,
		limit,
	);
	if (results.length === 0) return 0;
	try {
		await sendPointers(env, shard, results, nowMs);
	} catch (err) {
		await releaseSendTokens(shard.db, token);
		throw err;
	}
	log("warn", "sweep_resent", { shard: shard.index, count: results.length });
	return results.length;
}

export async function sweep(env: Env, config: Config, nowMs: number): Promise<SweepReport> {
	const report: SweepReport = {
		resent: 0,
		effectsDone: 0,
		effectsFailed: 0,
		archive: null,
		retention: null,
		alerts: [],
		databaseBytes: null,
	};
	// A reordered or grown DB_SHARDS (src/db/shards.ts) moves nothing: re-sent pointers and retried
	// effects would follow a list that no longer matches where the data is. Only the alerts run.
	const shards = getShards(env);
	let misplaced = false;
	let checked = false;
	try {
		misplaced = (await layoutMismatch(shards, nowMs)) !== null;
		checked = true;
		if (misplaced) log("error", "shard_layout_changed", { shards: shards.all.length });
	} catch (err) {
		log("error", "sweep_layout_check_failed", { error: errorMessage(err) });
	}
	if (checked && !misplaced) await sweepShards(env, config, shards, nowMs, report);
	try {
		const problem = misplaced ? "DB_SHARDS" : (configProblem(env)?.variable ?? null);
		const signals = await readSignals(shards, nowMs, problem);
		report.databaseBytes = signals.databaseBytes;
		report.alerts = await runAlerts(env, config, nowMs, signals);
	} catch (err) {
		log("error", "sweep_alerts_failed", { error: errorMessage(err) });
	}
	try {
		// One row written a minute: the console's "last sweep" (a sweep that stopped running is
		// otherwise invisible until its backlog alerts).
		const { resent, effectsDone, effectsFailed, databaseBytes } = report;
		await beat(env.DB, "sweep", nowMs, {
			resent,
			effectsDone,
			effectsFailed,
			databaseBytes,
			alerts: report.alerts.length,
		});
	} catch (err) {
		log("error", "sweep_heartbeat_failed", { error: errorMessage(err) });
	}
	return report;
}

/**
 * The steps that move things, each in every shard. Each step is independent: one failing must not
 * stop the others. Per-tick limits are shared out over the shards, so a tick does as much work
 * with S shards as with one (docs/design.md invariant 8).
 */
async function sweepShards(env: Env, config: Config, shards: Shards, nowMs: number, report: SweepReport) {
	const share = (limit: number) => Math.max(1, Math.ceil(limit / shards.all.length));
	try {
		report.resent = await resendStuckDeliveries(env, config, nowMs, share(SWEEP_BATCH));
	} catch (err) {
		log("error", "sweep_resend_failed", { error: errorMessage(err) });
	}
	try {
		const effects = await retryPendingEffects(env, config, nowMs, share(EFFECT_SWEEP_LIMIT));
		report.effectsDone = effects.done;
		report.effectsFailed = effects.failed;
	} catch (err) {
		log("error", "sweep_effects_failed", { error: errorMessage(err) });
	}
	const archive = env.ARCHIVE;
	if (archive) {
		try {
			const reports = await fanOut(shards, (shard) =>
				archiveSettledBodies(shard.db, archive, nowMs, share(ARCHIVE_CHUNK)),
			);
			report.archive = {
				archived: reports.reduce((n, r) => n + r.archived, 0),
				failed: reports.reduce((n, r) => n + r.failed, 0),
			};
		} catch (err) {
			log("error", "sweep_archive_failed", { error: errorMessage(err) });
		}
	}
	try {
		report.retention = await pruneExpired(shards, config, nowMs, env.ARCHIVE !== undefined);
	} catch (err) {
		log("error", "sweep_retention_failed", { error: errorMessage(err) });
	}
}
