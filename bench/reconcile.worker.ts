/**
 * Benchmark Worker for reconciliation (npm run bench:reconcile). It plans a run and executes its
 * window jobs one invocation at a time, as the RECONCILE queue would, against the fake API over
 * loopback HTTP, counting D1 round trips and subrequests per invocation. Snapshot messages go to a
 * counting sink: applying them is what bench:apply measures.
 */

import { CountingD1 } from "../fixtures/bindings";
import { type Env, parseReconcileConfig } from "../src/env";
import type { ReconcileJob } from "../src/queue/messages";
import { defaultDeps } from "../src/reconcile/client";
import { startRun } from "../src/reconcile/planner";
import { runWindow } from "../src/reconcile/window";

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
	async fetch(request: Request, env: Env & { BENCH_ONLY?: string }): Promise<Response> {
		const url = new URL(request.url);
		if (url.pathname === "/setup") {
			// Runs whatever SQL it is sent: only under its bench configuration (BENCH_ONLY in its toml).
			if (env.BENCH_ONLY !== "1") return new Response(null, { status: 404 });
			const { queries } = (await request.json()) as { queries: string[] };
			for (const q of queries) await env.DB.prepare(q).run();
			return Response.json({ ok: true });
		}
		if (!parseReconcileConfig(env).ok) return Response.json({ error: "config" }, { status: 500 });
		const jobs: ReconcileJob[] = [];
		if (url.pathname === "/plan") {
			const run = await startRun({ ...env, RECONCILE: sinkQueue<ReconcileJob>(() => {}, jobs) }, "admin", Date.now());
			return Response.json({ runId: run.runId, jobs });
		}
		if (url.pathname === "/job") {
			const job = (await request.json()) as ReconcileJob;
			const db = new CountingD1(env.DB);
			let fetches = 0;
			let queueCalls = 0;
			const count = (n: number) => {
				queueCalls += n;
			};
			const jobEnv: Env = {
				...env,
				DB: db.asD1(),
				EVENTS: sinkQueue(count),
				RECONCILE: sinkQueue<ReconcileJob>(count, jobs),
			};
			await runWindow(jobEnv, job, { ...defaultDeps(), onAttempt: () => fetches++ });
			return Response.json({ jobs, d1: db.roundTrips, subrequests: fetches + queueCalls });
		}
		if (url.pathname === "/control") {
			// The same number of D1 round trips and subrequests as a job, with no orders at all: the
			// local runtime's own memory growth per request, to read the job's figures against.
			const d1 = Number(url.searchParams.get("d1") ?? 0);
			const subrequests = Number(url.searchParams.get("subrequests") ?? 0);
			for (let i = 0; i < d1; i++) await env.DB.prepare("SELECT count(*) FROM reconcile_runs").first();
			const base = parseReconcileConfig(env);
			if (!base.ok) return Response.json({ error: "config" }, { status: 500 });
			for (let i = 0; i < subrequests; i++) await (await fetch(`${base.config.baseUrl}/control`)).arrayBuffer();
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
