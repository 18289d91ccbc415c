/**
 * Benchmark Worker for reconciliation (npm run bench:reconcile). It plans a run and executes its
 * window jobs one invocation at a time, as the RECONCILE queue would, against the fake API over
 * loopback HTTP, counting D1 round trips and statements per invocation, per shard, and
 * subrequests. Snapshot messages go to a counting sink: applying them is what bench:apply measures.
 * The shards are DB_SHARDS's bindings (src/db/shards.ts); the local orders are placed in them by
 * the receiver's own placement (shardOfResource), as the apply path would have put them.
 */

import { CountingD1 } from "../fixtures/bindings";
import { layoutHolds, shardOfResource } from "../src/db/shards";
import { type Env, getShards, parseReconcileConfig } from "../src/env";
import type { ReconcileJob } from "../src/queue/messages";
import { defaultDeps, PAGE_SIZE } from "../src/reconcile/client";
import { startRun } from "../src/reconcile/planner";
import { MAX_PAGES_PER_INVOCATION, runWindow } from "../src/reconcile/window";
import { localVersion, orderId, WALLET } from "./reconcile-orders";

type BenchEnv = Env & { BENCH_ONLY?: string };

/** A D1 binding by name (DB, DB_1, DB_2 in bench/wrangler.reconcile.toml), or null. */
function binding(env: BenchEnv, name: string): D1Database | null {
	const db = (env as unknown as Record<string, unknown>)[name] as Partial<D1Database> | undefined;
	return typeof db?.prepare === "function" ? (db as D1Database) : null;
}

/** DB_SHARDS's binding names, in order (checked by getShards, which throws on a bad list). */
function shardNames(env: BenchEnv): string[] {
	getShards(env);
	const names = (env.DB_SHARDS ?? "")
		.split(",")
		.map((s) => s.trim())
		.filter((s) => s !== "");
	return names.length > 0 ? names : ["DB"];
}

/** Rows per INSERT: one JSON parameter, well under D1's 100 KB statement and 2 MB value limits. */
const SEED_CHUNK = 2_000;

/**
 * Local resource rows for orders 0..n-1 (bench/reconcile-orders.ts), each in the shard the
 * receiver places it in. Returns, per shard, the orders placed there (whether held locally or
 * missing) and the rows written. The provider and type come from the driver (the sender whose
 * file declares an `api`). The shards record their layout first, as a deployment's first request
 * does (src/db/shards.ts): a shard holding data with no layout recorded is refused under several.
 */
async function seedLocal(
	env: BenchEnv,
	n: number,
	provider: string,
	type: string,
): Promise<{ placed: number[]; rows: number[] }> {
	const shards = getShards(env);
	if (!(await layoutHolds(shards, Date.now()))) throw new Error("DB_SHARDS does not match the recorded layout");
	const placed = shards.all.map(() => 0);
	const byShard = shards.all.map((): [string, number][] => []);
	for (let i = 0; i < n; i++) {
		const id = orderId(i);
		const shard = shardOfResource(shards, { provider, type, wallet: WALLET, id });
		placed[shard.index] = (placed[shard.index] ?? 0) + 1;
		const v = localVersion(i);
		if (v !== null) byShard[shard.index]?.push([id, v]);
	}
	const now = Date.now();
	await Promise.all(
		shards.all.map(async (shard) => {
			const rows = byShard[shard.index] ?? [];
			const statements: D1PreparedStatement[] = [];
			for (let at = 0; at < rows.length; at += SEED_CHUNK) {
				statements.push(
					shard.db
						.prepare(
							`INSERT INTO resources (provider, type, id, wallet, version, status, status_rank, data, updated_at, source)
               SELECT ?4, ?5, json_extract(value, '$[0]'), ?2, json_extract(value, '$[1]'),
                      'SUCCESS', 0, '{}', ?3, 'webhook'
               FROM json_each(?1)`,
						)
						.bind(JSON.stringify(rows.slice(at, at + SEED_CHUNK)), WALLET, now, provider, type),
				);
			}
			if (statements.length > 0) await shard.db.batch(statements);
		}),
	);
	return { placed, rows: byShard.map((r) => r.length) };
}

function sinkQueue<T>(onSend: (n: number) => void, store?: T[]): Queue<T> {
	return {
		async send(body: T) {
			onSend(1);
			store?.push(body);
		},
		async sendBatch(messages: Iterable<MessageSendRequest<T>>) {
			const list = [...messages];
			onSend(1);
			for (const m of list) store?.push(m.body);
		},
	} as unknown as Queue<T>;
}

/** Each job runs in its own request, as each queue invocation would run in its own event. */
export default {
	async fetch(request: Request, env: BenchEnv): Promise<Response> {
		const url = new URL(request.url);
		if (url.pathname === "/setup") {
			// Runs whatever SQL it is sent, on the binding named by ?db= (DB by default): only under
			// its bench configuration (BENCH_ONLY in its toml).
			if (env.BENCH_ONLY !== "1") return new Response(null, { status: 404 });
			const db = binding(env, url.searchParams.get("db") ?? "DB");
			if (!db) return Response.json({ error: "no such D1 binding" }, { status: 400 });
			const { queries } = (await request.json()) as { queries: string[] };
			for (const q of queries) await db.prepare(q).run();
			return Response.json({ ok: true });
		}
		if (url.pathname === "/seed-local") {
			if (env.BENCH_ONLY !== "1") return new Response(null, { status: 404 });
			const q = url.searchParams;
			return Response.json(await seedLocal(env, Number(q.get("n") ?? 0), q.get("provider") ?? "", q.get("type") ?? ""));
		}
		if (!parseReconcileConfig(env).ok) return Response.json({ error: "config" }, { status: 500 });
		const jobs: ReconcileJob[] = [];
		if (url.pathname === "/plan") {
			const run = await startRun({ ...env, RECONCILE: sinkQueue<ReconcileJob>(() => {}, jobs) }, "admin", Date.now());
			return Response.json({
				runId: run.runId,
				jobs,
				pagesPerInvocation: MAX_PAGES_PER_INVOCATION,
				pageSize: PAGE_SIZE,
			});
		}
		if (url.pathname === "/job") {
			const job = (await request.json()) as ReconcileJob;
			// One counter per shard, so the figures show each database's share of the invocation.
			const names = shardNames(env);
			const counters = names.map((name) => new CountingD1(binding(env, name) as D1Database, false));
			let fetches = 0;
			let queueCalls = 0;
			const count = (n: number) => {
				queueCalls += n;
			};
			const jobEnv: Env = {
				...env,
				...Object.fromEntries(names.map((name, i) => [name, counters[i]?.asD1()])),
				EVENTS: sinkQueue(count),
				RECONCILE: sinkQueue<ReconcileJob>(count, jobs),
			};
			await runWindow(jobEnv, job, { ...defaultDeps(), onAttempt: () => fetches++ });
			const perShard = counters.map((c) => ({ roundTrips: c.roundTrips, statements: c.statementCount }));
			return Response.json({
				jobs,
				d1: perShard.reduce((a, s) => a + s.roundTrips, 0),
				statements: perShard.reduce((a, s) => a + s.statements, 0),
				perShard,
				subrequests: fetches + queueCalls,
			});
		}
		if (url.pathname === "/control") {
			// The same number of D1 round trips and subrequests as a job, with no orders at all: the
			// local runtime's own memory growth per request, to read the job's figures against.
			const d1 = Number(url.searchParams.get("d1") ?? 0);
			const subrequests = Number(url.searchParams.get("subrequests") ?? 0);
			for (let i = 0; i < d1; i++) await env.DB.prepare("SELECT count(*) FROM reconcile_runs").first();
			const base = parseReconcileConfig(env);
			if (!base.ok) return Response.json({ error: "config" }, { status: 500 });
			// Any request to the fake API's host: only the subrequest counts.
			const control = new URL("/control", base.config.api.listUrl(base.config.credentials, WALLET));
			for (let i = 0; i < subrequests; i++) await (await fetch(control)).arrayBuffer();
			return Response.json({ ok: true });
		}
		if (url.pathname === "/report") {
			const report = await env.DB.prepare(
				"SELECT pages, orders_seen, repaired, status FROM reconcile_runs WHERE id = ?1",
			)
				.bind(url.searchParams.get("run"))
				.first();
			return Response.json(report);
		}
		return new Response("not found", { status: 404 });
	},
};
