/**
 * The planner (daily cron and POST /admin/reconcile): for each wallet, the period from its last
 * completed watermark minus RECONCILE_LOOKBACK_HOURS to now, split into windows, one RECONCILE
 * job per window. It only plans; the window jobs do the paging.
 */
import { failRun, insertFailedRun, insertRun, insertWindows, type RunTrigger, readWatermarks } from "../db/reconcile";
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
	trigger: RunTrigger,
	error: string,
	nowMs: number,
): Promise<PlannedRun> {
	await insertFailedRun(db, runId, trigger, error, nowMs);
	log("error", "reconcile_not_started", { runId, error });
	return { runId, windows: 0, error };
}

export async function startRun(env: Env, trigger: RunTrigger, nowMs: number): Promise<PlannedRun> {
	const db = env.DB;
	const runId = crypto.randomUUID();
	// Bad or missing credentials are a visible, failed run: never a crash loop.
	const parsed = parseReconcileConfig(env);
	if (!parsed.ok) return failedRun(db, runId, trigger, `configuration: ${parsed.error}`, nowMs);
	const { wallets, lookbackHours } = parsed.config;

	const marks = await readWatermarks(db, JSON.stringify(wallets));
	const watermark = new Map(marks.map((m) => [m.wallet, m.completed_to]));
	const lookbackMs = lookbackHours * 60 * 60_000;
	const windows = wallets.flatMap((wallet) =>
		splitWindows((watermark.get(wallet) ?? nowMs) - lookbackMs, nowMs).map((w) => ({ wallet, ...w })),
	);
	const periodFrom = Math.min(...windows.map((w) => w.fromMs));

	await db.batch([
		insertRun(db, runId, trigger, JSON.stringify(wallets), periodFrom, nowMs, windows.length),
		insertWindows(db, runId, JSON.stringify(windows)),
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
		await failRun(db, runId, nowMs, error);
		log("error", "reconcile_not_started", { runId, error });
		return { runId, windows: windows.length, error };
	}
	log("info", "reconcile_planned", { runId, trigger, wallets: wallets.length, windows: windows.length });
	return { runId, windows: windows.length, error: null };
}
