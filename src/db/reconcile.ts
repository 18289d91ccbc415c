/**
 * Every statement on `reconcile_runs`, `reconcile_windows` and `reconcile_watermarks`: the planner
 * writes a run and its windows, each window job saves its progress (one batch), dead-lettered work
 * fails its window and run and puts the watermark back (one batch); the admin API, the console and
 * the alerts read them (src/reconcile/).
 */
import type { SqlRow, WithStatus } from "./rows";
import type { reconcileRuns, reconcileWatermarks, reconcileWindows } from "./schema";

export const RUN_STATUSES = ["running", "done", "failed"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const RUN_TRIGGERS = ["cron", "admin"] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];
export const WINDOW_STATUSES = ["pending", "done", "failed"] as const;
export type WindowStatus = (typeof WINDOW_STATUSES)[number];

export type RunRow = Omit<WithStatus<SqlRow<typeof reconcileRuns>, RunStatus>, "trigger"> & { trigger: RunTrigger };
export type WindowRow = WithStatus<SqlRow<typeof reconcileWindows>, WindowStatus>;
export type WatermarkRow = SqlRow<typeof reconcileWatermarks>;

// --- runs and windows: the planner ---

/** A run that could not start (bad configuration): visible, already finished and failed. */
export async function insertFailedRun(
	db: D1Database,
	runId: string,
	trigger: RunTrigger,
	error: string,
	nowMs: number,
): Promise<void> {
	await db
		.prepare(
			`INSERT INTO reconcile_runs (id, trigger, status, wallets, period_from, period_to, windows_planned, errors, started_at, finished_at)
       VALUES (?1, ?2, 'failed', '[]', ?3, ?3, 0, json_array(?4), ?3, ?3)`,
		)
		.bind(runId, trigger, nowMs, error)
		.run();
}

/** The watermarks of the listed wallets (`walletsJson`: a JSON array of names). */
export async function readWatermarks(
	db: D1Database,
	walletsJson: string,
): Promise<Pick<WatermarkRow, "wallet" | "completed_to">[]> {
	const { results } = await db
		.prepare("SELECT wallet, completed_to FROM reconcile_watermarks WHERE wallet IN (SELECT value FROM json_each(?1))")
		.bind(walletsJson)
		.all<Pick<WatermarkRow, "wallet" | "completed_to">>();
	return results;
}

/** A new `running` run over [periodFrom, nowMs]; batched with insertWindows. */
export function insertRun(
	db: D1Database,
	runId: string,
	trigger: RunTrigger,
	walletsJson: string,
	periodFrom: number,
	nowMs: number,
	windowsPlanned: number,
): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO reconcile_runs (id, trigger, status, wallets, period_from, period_to, windows_planned, started_at)
         VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?5)`,
		)
		.bind(runId, trigger, walletsJson, periodFrom, nowMs, windowsPlanned);
}

/** The run's windows, `pending` (`windowsJson`: `{wallet, idx, fromMs, toMs}`). */
export function insertWindows(db: D1Database, runId: string, windowsJson: string): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO reconcile_windows (run_id, wallet, idx, from_ms, to_ms, status)
         SELECT ?1, value->>'wallet', value->>'idx', value->>'fromMs', value->>'toMs', 'pending' FROM json_each(?2)`,
		)
		.bind(runId, windowsJson);
}

/** A run whose window jobs could not be queued. */
export async function failRun(db: D1Database, runId: string, nowMs: number, error: string): Promise<void> {
	await db
		.prepare("UPDATE reconcile_runs SET status = 'failed', finished_at = ?2, errors = json_array(?3) WHERE id = ?1")
		.bind(runId, nowMs, error)
		.run();
}

// --- one window job ---

export type WindowProgressRow = Pick<
	WindowRow,
	"status" | "from_ms" | "to_ms" | "page_token" | "pages" | "restarts" | "retries"
>;

export function readWindow(
	db: D1Database,
	runId: string,
	wallet: string,
	idx: number,
): Promise<WindowProgressRow | null> {
	return db
		.prepare(
			"SELECT status, from_ms, to_ms, page_token, pages, restarts, retries FROM reconcile_windows WHERE run_id = ?1 AND wallet = ?2 AND idx = ?3",
		)
		.bind(runId, wallet, idx)
		.first<WindowProgressRow>();
}

export interface WindowProgress {
	runId: string;
	wallet: string;
	idx: number;
	status: WindowStatus;
	pages: number;
	seen: number;
	repaired: number;
	token: string | null;
	restarts: number;
	retries: number;
	lastError: string | null;
	/** The window's `pages` as read: the update applies only if no other invocation moved it since. */
	pagesBefore: number;
}

/** The window's progress, if it is still `pending` and unchanged since read; first in saveProgress's batch. */
export function saveWindowProgress(db: D1Database, p: WindowProgress): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE reconcile_windows SET status = ?4, pages = pages + ?5, orders_seen = orders_seen + ?6,
           repaired = repaired + ?7, page_token = ?8, restarts = ?9, retries = ?10, last_error = ?11
         WHERE run_id = ?1 AND wallet = ?2 AND idx = ?3 AND status = 'pending' AND pages = ?12`,
		)
		.bind(
			p.runId,
			p.wallet,
			p.idx,
			p.status,
			p.pages,
			p.seen,
			p.repaired,
			p.token,
			p.restarts,
			p.retries,
			p.lastError,
			p.pagesBefore,
		);
}

/** The run's counters, only if the statement before it (saveWindowProgress) changed a row. */
export function addRunProgress(
	db: D1Database,
	runId: string,
	pages: number,
	seen: number,
	repaired: number,
	windowsDone: 0 | 1,
	windowsFailed: 0 | 1,
	error: string | null,
): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE reconcile_runs SET pages = pages + ?2, orders_seen = orders_seen + ?3, repaired = repaired + ?4,
           windows_done = windows_done + ?5, windows_failed = windows_failed + ?6,
           errors = CASE WHEN ?7 IS NULL OR json_array_length(errors) >= 20 THEN errors ELSE json_insert(errors, '$[#]', ?7) END
         WHERE id = ?1 AND changes() > 0`,
		)
		.bind(runId, pages, seen, repaired, windowsDone, windowsFailed, error);
}

/** Finishes the run once every window has ended: `failed` if any window failed, else `done`. */
export function finishRun(db: D1Database, runId: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE reconcile_runs SET status = CASE WHEN windows_failed > 0 OR status = 'failed' THEN 'failed' ELSE 'done' END, finished_at = ?2
           WHERE id = ?1 AND finished_at IS NULL AND windows_done + windows_failed >= windows_planned`,
		)
		.bind(runId, nowMs);
}

/** The watermark advances only when every window of the run is done (the run finished `done` at nowMs). */
export function advanceWatermarks(db: D1Database, runId: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO reconcile_watermarks (wallet, completed_to, run_id)
           SELECT j.value, r.period_to, r.id FROM reconcile_runs AS r, json_each(r.wallets) AS j
           WHERE r.id = ?1 AND r.status = 'done' AND r.finished_at = ?2
           ON CONFLICT (wallet) DO UPDATE SET completed_to = max(completed_to, excluded.completed_to), run_id = excluded.run_id`,
		)
		.bind(runId, nowMs);
}

// --- dead-lettered work (src/reconcile/dead-letters.ts): one batch, in this order ---

const IN_WINDOWS = `(w.run_id, w.wallet, w.idx) IN (SELECT value->>'runId', value->>'wallet', value->>'idx' FROM json_each(?1))`;

/**
 * Before the window rows change: the window's start (or, without a window, the run's) bounds the
 * watermark. `itemsJson`: `{runId, wallet, idx}` of each failed item naming a wallet.
 */
export function putBackWatermarks(db: D1Database, itemsJson: string): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE reconcile_watermarks SET completed_to = b.back
         FROM (SELECT j.value->>'wallet' AS wallet, min(coalesce(w.from_ms, r.period_from)) AS back
               FROM json_each(?1) AS j
               JOIN reconcile_runs AS r ON r.id = j.value->>'runId'
               LEFT JOIN reconcile_windows AS w
                 ON w.run_id = r.id AND w.wallet = j.value->>'wallet' AND w.idx = j.value->>'idx'
               GROUP BY 1) AS b
         WHERE reconcile_watermarks.wallet = b.wallet AND reconcile_watermarks.completed_to > b.back`,
		)
		.bind(itemsJson);
}

/**
 * Before the window rows change: a window moves from done (or pending) to failed once.
 * `windowsJson`: `{runId, wallet, idx}`; `runsJson`: `{runId, error}`.
 */
export function failRunsOfWork(db: D1Database, windowsJson: string, runsJson: string): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE reconcile_runs SET
           windows_done = windows_done - (SELECT count(*) FROM reconcile_windows AS w
             WHERE w.run_id = reconcile_runs.id AND w.status = 'done' AND ${IN_WINDOWS}),
           windows_failed = windows_failed + (SELECT count(*) FROM reconcile_windows AS w
             WHERE w.run_id = reconcile_runs.id AND w.status IN ('pending', 'done') AND ${IN_WINDOWS}),
           status = 'failed',
           errors = CASE WHEN json_array_length(errors) >= 20 THEN errors
             ELSE json_insert(errors, '$[#]', (SELECT value->>'error' FROM json_each(?2) WHERE value->>'runId' = reconcile_runs.id)) END
         WHERE id IN (SELECT value->>'runId' FROM json_each(?2))`,
		)
		.bind(windowsJson, runsJson);
}

/** The listed windows (`{runId, wallet, idx, error}`) become `failed`. */
export function failWindows(db: D1Database, windowsJson: string): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE reconcile_windows AS w SET status = 'failed', last_error = j.value->>'error'
         FROM json_each(?1) AS j
         WHERE w.run_id = j.value->>'runId' AND w.wallet = j.value->>'wallet' AND w.idx = j.value->>'idx'
           AND w.status IN ('pending', 'done')`,
		)
		.bind(windowsJson);
}

/** A dead-lettered job may have been the run's last open window (`runsJson`: `{runId}`). */
export function finishRunsOf(db: D1Database, runsJson: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE reconcile_runs SET finished_at = ?2
         WHERE id IN (SELECT value->>'runId' FROM json_each(?1)) AND finished_at IS NULL
           AND windows_done + windows_failed >= windows_planned`,
		)
		.bind(runsJson, nowMs);
}

// --- reads: admin API, console, alerts ---

/** A page of runs, newest first, below rowid `below`; `k` is the cursor. */
export async function runPage(db: D1Database, below: number, take: number): Promise<(RunRow & { k: number })[]> {
	const { results } = await db
		.prepare("SELECT rowid AS k, * FROM reconcile_runs WHERE rowid < ?1 ORDER BY rowid DESC LIMIT ?2")
		.bind(below, take)
		.all<RunRow & { k: number }>();
	return results;
}

export function latestRun(db: D1Database): Promise<RunRow | null> {
	return db.prepare("SELECT * FROM reconcile_runs ORDER BY rowid DESC LIMIT 1").first<RunRow>();
}

/** The last finished run's repairs (rows: `{id, repaired}`). */
export function lastFinishedRunRepairs(db: D1Database): D1PreparedStatement {
	return db.prepare(
		"SELECT id, repaired FROM reconcile_runs WHERE finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT 1",
	);
}

export type WindowListRow = Omit<WindowRow, "page_token" | "restarts" | "retries">;

/** The windows of the listed runs, on the primary key (run_id leads); bounded. */
export async function windowsOfRuns(db: D1Database, runIdsJson: string): Promise<WindowListRow[]> {
	const { results } = await db
		.prepare(
			`SELECT run_id, wallet, idx, from_ms, to_ms, status, pages, orders_seen, repaired, last_error FROM reconcile_windows
       WHERE run_id IN (SELECT value FROM json_each(?1)) ORDER BY run_id, wallet, idx LIMIT 5000`,
		)
		.bind(runIdsJson)
		.all<WindowListRow>();
	return results;
}
