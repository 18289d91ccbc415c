import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { CountingD1, FaultyR2, RecordingQueue } from "../../fixtures/bindings";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import type { QueueMessage, ReconcileJob } from "../../src/queue/messages";

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

/** Empties every table the migrations created (read from the database, so a new table is never missed). */
export async function resetDb(): Promise<void> {
	const { results } = await env.DB.prepare(
		`SELECT name FROM sqlite_master WHERE type = 'table'
     AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'`,
	).all<{ name: string }>();
	await env.DB.batch(results.map((t) => env.DB.prepare(`DELETE FROM "${t.name}"`)));
}

export async function rows<T = Record<string, unknown>>(sql: string, ...binds: unknown[]): Promise<T[]> {
	return (
		await env.DB.prepare(sql)
			.bind(...binds)
			.all<T>()
	).results;
}
