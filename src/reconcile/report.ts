/** Run reports, as GET /admin/reconcile/runs and /admin/metrics show them. */
import { type Page, page } from "../admin/pagination";
import { iso } from "../time";

interface RunRow {
	id: string;
	trigger: string;
	status: string;
	wallets: string;
	period_from: number;
	period_to: number;
	windows_planned: number;
	windows_done: number;
	windows_failed: number;
	pages: number;
	orders_seen: number;
	repaired: number;
	errors: string;
	started_at: number;
	finished_at: number | null;
}

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
	const { results } = await db
		.prepare("SELECT rowid AS k, * FROM reconcile_runs WHERE rowid < ?1 ORDER BY rowid DESC LIMIT ?2")
		.bind(below, limit + 1)
		.all<RunRow & { k: number }>();
	return page(results, limit, (r) => r.k, runReport);
}

export async function lastRun(db: D1Database) {
	const r = await db.prepare("SELECT * FROM reconcile_runs ORDER BY rowid DESC LIMIT 1").first<RunRow>();
	return r ? runReport(r) : null;
}
