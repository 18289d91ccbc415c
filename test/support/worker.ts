import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import type { QueueMessage, ReconcileJob } from "../../src/queue/messages";
import { CountingD1, FaultyR2, RecordingQueue } from "./bindings";

export interface Harness {
	env: Env;
	db: CountingD1;
	events: RecordingQueue<QueueMessage>;
	reconcile: RecordingQueue<ReconcileJob>;
	archive: FaultyR2;
}

/** A fresh env per test: the real bindings behind counting/fault-injecting wrappers. */
export function harness(vars: Partial<Env> = {}): Harness {
	const db = new CountingD1(env.DB);
	const events = new RecordingQueue<QueueMessage>(env.EVENTS);
	const reconcile = new RecordingQueue<ReconcileJob>(env.RECONCILE);
	if (!env.ARCHIVE) throw new Error("wrangler.toml declares no ARCHIVE bucket");
	const archive = new FaultyR2(env.ARCHIVE);
	// ARCHIVE: undefined in `vars` runs the test without the binding.
	const ARCHIVE = "ARCHIVE" in vars ? vars.ARCHIVE : archive.asR2();
	return {
		env: { ...env, ...vars, ARCHIVE, DB: db.asD1(), EVENTS: events.asQueue(), RECONCILE: reconcile.asQueue() },
		db,
		events,
		reconcile,
		archive,
	};
}

/** Calls the Worker's fetch and waits for its waitUntil work. */
export async function call(h: Harness, request: Request): Promise<Response> {
	const ctx = createExecutionContext();
	const res = await worker.fetch(request, h.env, ctx);
	await waitOnExecutionContext(ctx);
	return res;
}

const TABLES = [
	"deliveries",
	"resources",
	"effects",
	"settled_totals",
	"rejections",
	"rejection_counts",
	"alert_state",
	"reconcile_runs",
	"reconcile_windows",
	"reconcile_watermarks",
];

export async function resetDb(): Promise<void> {
	await env.DB.batch(TABLES.map((t) => env.DB.prepare(`DELETE FROM ${t}`)));
}

export async function rows<T = Record<string, unknown>>(sql: string, ...binds: unknown[]): Promise<T[]> {
	return (
		await env.DB.prepare(sql)
			.bind(...binds)
			.all<T>()
	).results;
}
