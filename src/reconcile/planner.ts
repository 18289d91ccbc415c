/**
 * The planner (daily cron and POST /admin/reconcile): for each wallet, the period from its last
 * completed watermark minus RECONCILE_LOOKBACK_HOURS to now, split into windows, one RECONCILE
 * job per window. It only plans; the window jobs do the paging.
 */
import { type Env, parseReconcileConfig } from "../env";
import { errorMessage, log } from "../log";
import { SEND_BATCH_LIMIT } from "../queue/enqueue";
import type { ReconcileJob } from "../queue/messages";

export const WINDOW_MS = 6 * 60 * 60_000;
/** A long-stale watermark widens the windows instead of planning thousands of them. */
export const MAX_WINDOWS_PER_WALLET = 120;

export interface Window {
	idx: number;
	fromMs: number;
	toMs: number;
}

export function splitWindows(fromMs: number, toMs: number): Window[] {
	if (toMs <= fromMs) return [];
	const size = Math.max(WINDOW_MS, Math.ceil((toMs - fromMs) / MAX_WINDOWS_PER_WALLET));
	const windows: Window[] = [];
	for (let start = fromMs, idx = 0; start < toMs; start += size, idx++) {
		windows.push({ idx, fromMs: start, toMs: Math.min(start + size, toMs) });
	}
	return windows;
}

export interface PlannedRun {
	runId: string;
	windows: number;
	error: string | null;
}

async function failedRun(
	db: D1Database,
	runId: string,
	trigger: string,
	error: string,
	nowMs: number,
): Promise<PlannedRun> {
	await db
		.prepare(
			`INSERT INTO reconcile_runs (id, trigger, status, wallets, period_from, period_to, windows_planned, errors, started_at, finished_at)
       VALUES (?1, ?2, 'failed', '[]', ?3, ?3, 0, json_array(?4), ?3, ?3)`,
		)
		.bind(runId, trigger, nowMs, error)
		.run();
	log("error", "reconcile_not_started", { runId, error });
	return { runId, windows: 0, error };
}

export async function startRun(env: Env, trigger: "cron" | "admin", nowMs: number): Promise<PlannedRun> {
	const db = env.DB;
	const runId = crypto.randomUUID();
	// Bad or missing credentials are a visible, failed run: never a crash loop.
	const parsed = parseReconcileConfig(env);
	if (!parsed.ok) return failedRun(db, runId, trigger, `configuration: ${parsed.error}`, nowMs);
	const { wallets, lookbackHours } = parsed.config;

	const { results: marks } = await db
		.prepare("SELECT wallet, completed_to FROM reconcile_watermarks WHERE wallet IN (SELECT value FROM json_each(?1))")
		.bind(JSON.stringify(wallets))
		.all<{ wallet: string; completed_to: number }>();
	const watermark = new Map(marks.map((m) => [m.wallet, m.completed_to]));
	const lookbackMs = lookbackHours * 60 * 60_000;
	const windows = wallets.flatMap((wallet) =>
		splitWindows((watermark.get(wallet) ?? nowMs) - lookbackMs, nowMs).map((w) => ({ wallet, ...w })),
	);
	const periodFrom = Math.min(...windows.map((w) => w.fromMs));

	await db.batch([
		db
			.prepare(
				`INSERT INTO reconcile_runs (id, trigger, status, wallets, period_from, period_to, windows_planned, started_at)
         VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?5)`,
			)
			.bind(runId, trigger, JSON.stringify(wallets), periodFrom, nowMs, windows.length),
		db
			.prepare(
				`INSERT INTO reconcile_windows (run_id, wallet, idx, from_ms, to_ms, status)
         SELECT ?1, value->>'wallet', value->>'idx', value->>'fromMs', value->>'toMs', 'pending' FROM json_each(?2)`,
			)
			.bind(runId, JSON.stringify(windows)),
	]);
	try {
		for (let i = 0; i < windows.length; i += SEND_BATCH_LIMIT) {
			const jobs = windows.slice(i, i + SEND_BATCH_LIMIT).map(({ wallet, idx }) => ({
				body: { kind: "reconcile_window", runId, wallet, idx } satisfies ReconcileJob,
			}));
			await env.RECONCILE.sendBatch(jobs);
		}
	} catch (err) {
		const error = `could not enqueue windows: ${errorMessage(err)}`;
		await db
			.prepare("UPDATE reconcile_runs SET status = 'failed', finished_at = ?2, errors = json_array(?3) WHERE id = ?1")
			.bind(runId, nowMs, error)
			.run();
		log("error", "reconcile_not_started", { runId, error });
		return { runId, windows: windows.length, error };
	}
	log("info", "reconcile_planned", { runId, trigger, wallets: wallets.length, windows: windows.length });
	return { runId, windows: windows.length, error: null };
}
