import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { CountingD1, FaultyR2, RecordingQueue } from "../../fixtures/bindings";
import { type Env, getShards } from "../../src/env";
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
	// With TEST_SHARDS=3 the other shards go through the same counters (CountingD1.sibling).
	const shards = Object.fromEntries(
		getShards(env)
			.all.slice(1)
			.map((s, i) => [`DB_${i + 1}`, db.sibling(s.db)]),
	);
	return {
		env: {
			...env,
			...vars,
			ARCHIVE,
			DB: db.asD1(),
			...shards,
			EVENTS: events.asQueue(),
			RECONCILE: reconcile.asQueue(),
		},
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

/** Empties every table the migrations created, in every shard (read from the database, so a new table is never missed). */
export async function resetDb(): Promise<void> {
	for (const { db } of getShards(env).all) {
		const { results } = await db
			.prepare(
				`SELECT name FROM sqlite_master WHERE type = 'table'
       AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'`,
			)
			.all<{ name: string }>();
		await db.batch(results.map((t) => db.prepare(`DELETE FROM "${t.name}"`)));
	}
}

/**
 * Rows of a query, run in every shard and concatenated (shard order): with TEST_SHARDS=3 a row is
 * wherever its resource was placed. Queries that aggregate use `rowsPerShard` or sum themselves.
 */
export async function rows<T = Record<string, unknown>>(sql: string, ...binds: unknown[]): Promise<T[]> {
	if (HOME_ONLY.test(sql))
		return (
			await env.DB.prepare(sql)
				.bind(...binds)
				.all<T>()
		).results;
	return (await rowsPerShard<T>(sql, ...binds)).flat();
}

/** Tables that only the home shard uses (src/db/shards.ts): asked there alone. */
const HOME_ONLY = /\bFROM (rejections|rejection_counts|alert_state|reconcile_\w+|heartbeats)\b/i;

/** `SELECT count(*) FROM <fromWhere>` summed over the shards. */
export async function countRows(fromWhere: string, ...binds: unknown[]): Promise<number> {
	const perShard = await rowsPerShard<{ n: number }>(`SELECT count(*) AS n FROM ${fromWhere}`, ...binds);
	return perShard.reduce((sum, r) => sum + Number(r[0]?.n ?? 0), 0);
}

export async function rowsPerShard<T = Record<string, unknown>>(sql: string, ...binds: unknown[]): Promise<T[][]> {
	return Promise.all(
		getShards(env).all.map(
			async ({ db }) =>
				(
					await db
						.prepare(sql)
						.bind(...binds)
						.all<T>()
				).results,
		),
	);
}
