/**
 * Operational alerts on the thresholds of the primary sender's published best practices
 * (docs/providers.md 1.6, "Alerts"), evaluated by the sweep cron. Each rule's firing state is kept
 * in D1, so an incident alerts once when it starts and once when it clears, not on every tick.
 */

import { readAlertStates, setAlertState } from "../db/alerts";
import { ackP99Since, countFailedDeliveries, oldestUnprocessed } from "../db/deliveries";
import { countFailedEffects } from "../db/effects";
import { lastFinishedRunRepairs } from "../db/reconcile";
import { rejectionsOfReasonsSince, rejectionsPerMinute } from "../db/rejections";
import { fanOut, type Shards, shardsFrom } from "../db/shards";
import { D1_LIMIT_BYTES, DATABASE_ALERT_RATIO, sizeAfter } from "../db/size";
import { EFFECT_MAX_ATTEMPTS } from "../effects/executor";
import { type Config, configProblem, type Env, getShards } from "../env";
import { errorMessage, log } from "../log";
import { AlertRejected, postAlert } from "../notify";
import { VERIFY_FAILURES } from "../providers/types";

export const SIGNATURE_FAILURE_MINUTES = 5;
export const ACK_P99_LIMIT_MS = 3_000;
export const ACK_WINDOW_MS = 5 * 60_000;
export const BACKLOG_LIMIT_MS = 10 * 60_000;

export interface Signals {
	/** Signature failures in each of the last SIGNATURE_FAILURE_MINUTES full minutes, oldest first. */
	signatureFailuresPerMinute: number[];
	ackP99Ms: number | null;
	oldestUnprocessedMs: number | null;
	failedDeliveries: number;
	/** Effects given up after EFFECT_MAX_ATTEMPTS (status `failed`), waiting for a hand retry. */
	failedEffects: number;
	lastReconcileRepairs: { runId: string; repaired: number } | null;
	/** Refusals that are our configuration's fault, by reason, over the last CONFIG_ALERT_MINUTES. */
	misconfigured: Partial<Record<MisconfiguredReason, number>>;
	/** The variable whose value does not parse (the name, never the value), or null. */
	configProblem: string | null;
	/** The fullest database's size in bytes as D1 reports it (meta.size_after; one shard's with DB_SHARDS), or null. */
	databaseBytes: number | null;
}

/**
 * Genuine deliveries our configuration turned away with a 503 (the sender retries): a provider
 * registered before its secrets were set, a source outside a stale ALLOWED_SOURCE_CIDRS.
 */
export const MISCONFIGURED_REASONS = ["provider_not_configured", "source_not_allowed", "config_error"] as const;
export type MisconfiguredReason = (typeof MISCONFIGURED_REASONS)[number];
export const CONFIG_ALERT_MINUTES = 5;

export type AlertName =
	| "signature_failures"
	| "ack_latency"
	| "backlog"
	| "dead_letters"
	| "failed_effects"
	| "reconcile_repairs"
	| "config_error"
	| "database_size"
	| MisconfiguredReason;

/** Pure: which alerts fire, with a short detail, given the signals. */
export function evaluate(s: Signals, nowMs: number): Map<AlertName, string> {
	const firing = new Map<AlertName, string>();
	if (
		s.signatureFailuresPerMinute.length === SIGNATURE_FAILURE_MINUTES &&
		s.signatureFailuresPerMinute.every((n) => n > 0)
	) {
		firing.set("signature_failures", `signature failures in each of the last ${SIGNATURE_FAILURE_MINUTES} minutes`);
	}
	if (s.ackP99Ms !== null && s.ackP99Ms > ACK_P99_LIMIT_MS)
		firing.set("ack_latency", `ack p99 ${s.ackP99Ms} ms over 5 min`);
	if (s.oldestUnprocessedMs !== null && nowMs - s.oldestUnprocessedMs > BACKLOG_LIMIT_MS) {
		firing.set("backlog", `oldest unprocessed delivery is ${Math.round((nowMs - s.oldestUnprocessedMs) / 1000)} s old`);
	}
	if (s.failedDeliveries > 0) firing.set("dead_letters", `${s.failedDeliveries} deliveries failed (dead-lettered)`);
	if (s.failedEffects > 0) {
		firing.set(
			"failed_effects",
			`${s.failedEffects} effects failed after ${EFFECT_MAX_ATTEMPTS} attempts (retry: POST /admin/effects/:id/retry)`,
		);
	}
	if (s.lastReconcileRepairs && s.lastReconcileRepairs.repaired > 0) {
		firing.set(
			"reconcile_repairs",
			`run ${s.lastReconcileRepairs.runId} repaired ${s.lastReconcileRepairs.repaired} orders`,
		);
	}
	// A full database answers every delivery 503 until the senders give up: warn well before.
	if (s.databaseBytes !== null && s.databaseBytes >= DATABASE_ALERT_RATIO * D1_LIMIT_BYTES) {
		const gb = (n: number) => (n / 1e9).toFixed(2);
		firing.set(
			"database_size",
			`database at ${gb(s.databaseBytes)} GB of D1's ${gb(D1_LIMIT_BYTES)} GB limit (alert at ${DATABASE_ALERT_RATIO * 100}%)`,
		);
	}
	for (const reason of MISCONFIGURED_REASONS) {
		const n = s.misconfigured[reason] ?? 0;
		if (n > 0) firing.set(reason, `${n} requests refused (503, ${reason}) in the last ${CONFIG_ALERT_MINUTES} min`);
	}
	// A variable that does not parse is a problem before any request shows it.
	if (s.configProblem !== null) firing.set("config_error", `${s.configProblem} does not parse: webhooks answer 503`);
	return firing;
}

/**
 * One batch per shard. Across shards: counts add up, the oldest backlog is the oldest of any, the
 * ack p99 is the highest shard's (an upper bound of the whole's), and the size is the fullest
 * shard's, since each database has its own limit (src/db/shards.ts).
 */
export async function readSignals(
	shards: Shards,
	nowMs: number,
	configProblem: string | null = null,
): Promise<Signals> {
	const thisMinute = Math.floor(nowMs / 60_000);
	// Every verify failure is a signature or timestamp problem (the 401s).
	const reasons = JSON.stringify(VERIFY_FAILURES);
	const home = shards.home.db;
	const [[perMinute, reconcile, misconfigured], perShard] = await Promise.all([
		home.batch<Record<string, number | string | null>>([
			rejectionsPerMinute(home, thisMinute - SIGNATURE_FAILURE_MINUTES, thisMinute, reasons),
			lastFinishedRunRepairs(home),
			rejectionsOfReasonsSince(home, thisMinute - CONFIG_ALERT_MINUTES, JSON.stringify(MISCONFIGURED_REASONS)),
		]),
		fanOut(shards, async ({ db }) => {
			const [p99, oldest, failed, failedEffects] = await db.batch<Record<string, number | string | null>>([
				ackP99Since(db, nowMs - ACK_WINDOW_MS),
				oldestUnprocessed(db),
				countFailedDeliveries(db),
				countFailedEffects(db),
			]);
			return {
				ackP99Ms: p99?.results[0] ? Number(p99.results[0].ack_ms) : null,
				oldest: typeof oldest?.results[0]?.oldest === "number" ? oldest.results[0].oldest : null,
				failed: Number(failed?.results[0]?.n ?? 0),
				failedEffects: Number(failedEffects?.results[0]?.n ?? 0),
				bytes: sizeAfter(failed),
			};
		}),
	]);
	const counts = new Map((perMinute?.results ?? []).map((r) => [Number(r.minute), Number(r.n)]));
	const run = reconcile?.results[0];
	const known = <T>(values: (T | null)[]) => values.filter((v): v is T => v !== null);
	const highest = (values: number[]) => (values.length === 0 ? null : Math.max(...values));
	const oldestOf = known(perShard.map((s) => s.oldest));
	return {
		signatureFailuresPerMinute: Array.from(
			{ length: SIGNATURE_FAILURE_MINUTES },
			(_, i) => counts.get(thisMinute - SIGNATURE_FAILURE_MINUTES + i) ?? 0,
		),
		ackP99Ms: highest(known(perShard.map((s) => s.ackP99Ms))),
		oldestUnprocessedMs: oldestOf.length === 0 ? null : Math.min(...oldestOf),
		failedDeliveries: perShard.reduce((n, s) => n + s.failed, 0),
		failedEffects: perShard.reduce((n, s) => n + s.failedEffects, 0),
		lastReconcileRepairs: run ? { runId: String(run.id), repaired: Number(run.repaired) } : null,
		misconfigured: Object.fromEntries((misconfigured?.results ?? []).map((r) => [String(r.reason), Number(r.n)])),
		configProblem,
		databaseBytes: highest(known(perShard.map((s) => s.bytes))),
	};
}

export interface AlertTransition {
	name: AlertName;
	state: "firing" | "resolved";
	detail: string;
}

/** Alerts whose every new detail is a new incident (each reconcile run with repairs is one). */
const NEW_INCIDENT_ON_NEW_DETAIL: ReadonlySet<AlertName> = new Set(["reconcile_repairs"]);

/** Evaluates the rules, alerts on every change of state, and records the new states. */
export async function runAlerts(
	env: Env,
	config: Config,
	nowMs: number,
	signals?: Signals,
): Promise<AlertTransition[]> {
	const db = env.DB;
	const firing = evaluate(
		signals ?? (await readSignals(shardsOrHome(env), nowMs, configProblem(env)?.variable ?? null)),
		nowMs,
	);
	const state = await readAlertStates(db);
	const was = new Map(state.filter((s) => s.firing === 1).map((s) => [s.name, s.detail ?? ""]));
	const transitions: AlertTransition[] = [];
	for (const [name, detail] of firing) {
		const before = was.get(name);
		if (before === undefined || (NEW_INCIDENT_ON_NEW_DETAIL.has(name) && before !== detail)) {
			transitions.push({ name, state: "firing", detail });
		}
	}
	for (const [name, detail] of was)
		if (!firing.has(name as AlertName)) transitions.push({ name: name as AlertName, state: "resolved", detail });
	if (transitions.length === 0) return [];

	// Alert first, record after: a lost record repeats an alert, a lost alert would hide an incident.
	for (const t of transitions) {
		log(t.state === "firing" ? "error" : "info", `alert_${t.state}`, { alert: t.name, detail: t.detail });
		try {
			await postAlert(
				config,
				`${t.name} ${t.state}: ${t.detail}`,
				{ alert: t.name, state: t.state, detail: t.detail, at: new Date(nowMs).toISOString() },
				`${t.name}-${t.state}-${nowMs}`,
			);
		} catch (err) {
			// Not delivered, so not recorded: the next tick tries again. A 4xx (the target refuses
			// the alert) was logged once with its reason by postAlert; repeating it every minute adds
			// nothing, while a 5xx or a timeout is the target's transient trouble and is logged each time.
			if (!(err instanceof AlertRejected))
				log("error", "alert_not_delivered", { alert: t.name, error: errorMessage(err) });
			return [];
		}
	}
	await db.batch(transitions.map((t) => setAlertState(db, t.name, t.state === "firing" ? 1 : 0, nowMs, t.detail)));
	return transitions;
}

/** The alerts must run even when DB_SHARDS is what is broken: then the home shard alone. */
function shardsOrHome(env: Env): Shards {
	try {
		return getShards(env);
	} catch {
		return shardsFrom([env.DB]);
	}
}
