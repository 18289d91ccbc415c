/**
 * The receiver as deployed (src/index.ts), with its D1 binding behind a counter of round trips
 * and rows written (ingress and the real queue consumers), for npm run bench (config
 * bench/wrangler.receiver.toml).
 *
 * BENCH_SKIP (comma-separated, bench/profile-ingress.ts only) leaves steps out, to see what each
 * costs: `logs` (every console line), `apply` (the consumer acks without applying), `mark` (the
 * `enqueued` mark becomes a no-op statement). Never set by bench:ingress.
 */

import { CountingD1 } from "../fixtures/bindings";
import type { Env } from "../src/env";
import worker from "../src/index";
import type { QueueMessage, ReconcileJob } from "../src/queue/messages";

/** Marks the `enqueued` mark's SQL (src/db/deliveries.ts markEnqueuedStatement). */
const MARK_SQL = "THEN 'enqueued' ELSE status END";

/** D1 whose `enqueued` marks do nothing (same parameters, so batches keep their shape). */
function withoutMarks(db: D1Database): D1Database {
	return new Proxy(db, {
		get(target, key) {
			if (key === "prepare")
				return (sql: string) => target.prepare(sql.includes(MARK_SQL) ? "SELECT ?1, ?2 WHERE 0" : sql);
			const value = Reflect.get(target, key);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

let skip: Set<string> | null = null;
function skipped(env: { BENCH_SKIP?: string }): Set<string> {
	if (skip) return skip;
	skip = new Set((env.BENCH_SKIP ?? "").split(",").filter(Boolean));
	if (skip.has("logs")) for (const k of ["log", "info", "warn", "error", "debug"] as const) console[k] = () => {};
	return skip;
}

let counting: CountingD1 | null = null;
let countingApply: CountingD1 | null = null;
let wrappedApply: Env | null = null;
// One wrapped env for the isolate, as workerd passes the same env to every request: a fresh
// object per request would defeat the caches keyed by env (parsed configuration).
let wrapped: Env | null = null;

export default {
	async fetch(
		request: Request,
		env: Env & { BENCH_ONLY?: string; BENCH_SKIP?: string },
		ctx: ExecutionContext,
	): Promise<Response> {
		const url = new URL(request.url);
		const steps = skipped(env);
		if (url.pathname === "/__bench/setup") {
			// Runs whatever SQL it is sent: only under bench/wrangler.receiver.toml (BENCH_ONLY), whose
			// Worker and database names are its own, never the deployable wrangler.toml.
			if (env.BENCH_ONLY !== "1") return new Response(null, { status: 404 });
			const { queries } = (await request.json()) as { queries: string[] };
			for (const q of queries) await env.DB.prepare(q).run();
			return Response.json({ ok: true });
		}
		counting ??= new CountingD1(steps.has("mark") ? withoutMarks(env.DB) : env.DB, false);
		if (url.pathname === "/__bench/d1")
			return Response.json({
				roundTrips: counting.roundTrips,
				rowsWritten: counting.rowsWritten + (countingApply?.rowsWritten ?? 0),
			});
		wrapped ??= { ...env, DB: counting.asD1() };
		return worker.fetch(request, wrapped, ctx);
	},
	// The consumer's writes are counted apart (round trips stay the ingress figure); rows written
	// add both.
	async queue(
		batch: MessageBatch<QueueMessage | ReconcileJob>,
		env: Env & { BENCH_SKIP?: string },
		ctx: ExecutionContext,
	): Promise<void> {
		if (skipped(env).has("apply")) return batch.ackAll();
		countingApply ??= new CountingD1(env.DB, false);
		wrappedApply ??= { ...env, DB: countingApply.asD1() };
		return worker.queue(batch, wrappedApply, ctx);
	},
	scheduled: worker.scheduled,
} satisfies ExportedHandler<Env, QueueMessage | ReconcileJob>;
