/**
 * Reconciliation work that dead-lettered: a snapshot that EVENTS gave up on, or a RECONCILE job
 * that the RECONCILE queue gave up on. Either way something the run listed was not applied, so the
 * run must not count as complete (docs/design.md invariant 5 holds for what is applied; this keeps
 * the watermark honest about what was not):
 *   - the window becomes `failed` (from `pending`: it stops paging; from `done`: its snapshots are
 *     sent before it saves progress, so a snapshot can dead-letter after the window is done);
 *   - the run becomes `failed` with the error in its report, whether it is still running (it ends
 *     failed, so it never advances the watermark) or already finished;
 *   - the wallet's watermark is put back to the start of the window when it is past it.
 * Putting the watermark back is what makes the late case correct without waiting for every
 * snapshot of a run to be applied (which would need a per-run count of applied snapshots): a run
 * can finish and advance the watermark while its snapshots are still in the queue, and even a
 * later run may have moved it on; whichever run set it, the next run plans from the failed
 * window's start minus RECONCILE_LOOKBACK_HOURS and lists the lost order again. Putting it back
 * costs at most one lookback of re-listing, which is idempotent. All of it is one D1 batch.
 */
import { failRunsOfWork, failWindows, finishRunsOf, putBackWatermarks } from "../db/reconcile";
import type { Env } from "../env";
import { log } from "../log";
import type { ReconcileJob } from "../queue/messages";

export interface FailedWork {
	runId: string;
	/** null: unknown (an old snapshot message without its window, and an order naming no wallet). */
	wallet: string | null;
	/** null: the window is unknown (a snapshot message sent before messages named their window). */
	idx: number | null;
	error: string;
}

/** A run's report keeps 20 errors; one entry per run per dead-letter batch, naming a few windows. */
function runError(items: readonly FailedWork[]): string {
	const lines = items.slice(0, 3).map((i) => `${i.wallet ?? "?"}${i.idx === null ? "" : `#${i.idx}`}: ${i.error}`);
	return items.length > 3 ? `${lines.join("; ")}; and ${items.length - 3} more dead-lettered` : lines.join("; ");
}

export async function failReconcileWork(db: D1Database, items: readonly FailedWork[], nowMs: number): Promise<void> {
	if (items.length === 0) return;
	const windows = new Map<string, FailedWork>();
	const byRun = new Map<string, FailedWork[]>();
	for (const item of items) {
		if (item.wallet !== null && item.idx !== null) {
			const key = JSON.stringify([item.runId, item.wallet, item.idx]);
			if (!windows.has(key)) windows.set(key, item);
		}
		const list = byRun.get(item.runId) ?? [];
		list.push(item);
		byRun.set(item.runId, list);
	}
	const windowsJson = JSON.stringify([...windows.values()]);
	const runsJson = JSON.stringify([...byRun].map(([runId, list]) => ({ runId, error: runError(list) })));
	const putBackJson = JSON.stringify(items.filter((i) => i.wallet !== null));
	await db.batch([
		putBackWatermarks(db, putBackJson),
		failRunsOfWork(db, windowsJson, runsJson),
		failWindows(db, windowsJson),
		finishRunsOf(db, runsJson, nowMs),
	]);
	log("error", "reconcile_work_dead_lettered", { runs: byRun.size, windows: windows.size, items: items.length });
}

/**
 * The RECONCILE dead-letter consumer: a window job whose retries are exhausted (D1 or the queue
 * kept failing) fails its window and its run. Needs no configuration.
 */
export async function consumeReconcileDeadLetters(batch: MessageBatch<ReconcileJob>, env: Env): Promise<void> {
	const items: FailedWork[] = [];
	for (const m of batch.messages) {
		const job = m.body as Partial<ReconcileJob> | null;
		if (
			job?.kind === "reconcile_window" &&
			typeof job.runId === "string" &&
			typeof job.wallet === "string" &&
			typeof job.idx === "number"
		) {
			items.push({ runId: job.runId, wallet: job.wallet, idx: job.idx, error: "reconcile job retries exhausted" });
		} else {
			log("error", "unknown_reconcile_message", { queue: batch.queue, id: m.id });
		}
	}
	await failReconcileWork(env.DB, items, Date.now());
	batch.ackAll();
}
