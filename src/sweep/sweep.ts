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
import { retryPendingEffects } from "../effects/executor";
import { type Config, configProblem, type Env } from "../env";
import { SEND_LEASE_MS } from "../ingress/inbox";
import { errorMessage, log } from "../log";
import { sendPointers } from "../queue/enqueue";
import { type AlertTransition, readSignals, runAlerts } from "./alerts";
import { type ArchiveReport, archiveSettledBodies } from "./archive";
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

export async function resendStuckDeliveries(
	env: Env,
	config: Config,
	nowMs: number,
	limit = SWEEP_BATCH,
): Promise<number> {
	const token = crypto.randomUUID();
	// `received` rows first: nothing but the sweep (or a provider retry) will ever send them, while
	// `enqueued` rows past the threshold are most often only waiting in a queue backlog and must
	// not crowd them out (docs/design.md invariant 3).
	const results = await takeStuckDeliveries(
		env.DB,
		token,
		nowMs,
		nowMs - config.sweepStaleSeconds * 1000,
		nowMs - SEND_LEASE_MS,
		limit,
	);
	if (results.length === 0) return 0;
	try {
		await sendPointers(env, results, nowMs);
	} catch (err) {
		await releaseSendTokens(env.DB, token);
		throw err;
	}
	log("warn", "sweep_resent", { count: results.length });
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
	// Each step is independent: one failing must not stop the others.
	try {
		report.resent = await resendStuckDeliveries(env, config, nowMs);
	} catch (err) {
		log("error", "sweep_resend_failed", { error: errorMessage(err) });
	}
	try {
		const effects = await retryPendingEffects(env, config, nowMs);
		report.effectsDone = effects.done;
		report.effectsFailed = effects.failed;
	} catch (err) {
		log("error", "sweep_effects_failed", { error: errorMessage(err) });
	}
	if (env.ARCHIVE) {
		try {
			report.archive = await archiveSettledBodies(env.DB, env.ARCHIVE, nowMs);
		} catch (err) {
			log("error", "sweep_archive_failed", { error: errorMessage(err) });
		}
	}
	try {
		report.retention = await pruneExpired(env.DB, config, nowMs, env.ARCHIVE !== undefined);
	} catch (err) {
		log("error", "sweep_retention_failed", { error: errorMessage(err) });
	}
	try {
		const signals = await readSignals(env.DB, nowMs, configProblem(env)?.variable ?? null);
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
