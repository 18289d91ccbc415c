/** Run reports, as GET /admin/reconcile/runs and /admin/metrics show them. */
import { type Page, page } from "../admin/pagination";
import { latestRun, type RunRow, runPage } from "../db/reconcile";
import { iso } from "../time";

export function runReport(r: RunRow) {
	return {
		runId: r.id,
		trigger: r.trigger,
		status: r.status,
		wallets: JSON.parse(r.wallets) as string[],
		period: { from: iso(r.period_from), to: iso(r.period_to) },
		windows: { planned: r.windows_planned, done: r.windows_done, failed: r.windows_failed },
		pages: r.pages,
		ordersSeen: r.orders_seen,
		repaired: r.repaired,
		errors: JSON.parse(r.errors) as string[],
		startedAt: iso(r.started_at),
		finishedAt: iso(r.finished_at),
	};
}

export async function listRuns(
	db: D1Database,
	below: number,
	limit: number,
): Promise<Page<ReturnType<typeof runReport>>> {
	const results = await runPage(db, below, limit + 1);
	return page(results, limit, (r) => r.k, runReport);
}

export async function lastRun(db: D1Database) {
	const r = await latestRun(db);
	return r ? runReport(r) : null;
}
