/**
 * The receiver as deployed (src/index.ts), with its D1 binding behind a counter of round trips
 * and rows written (ingress and the real queue consumers), for npm run bench (config
 * bench/wrangler.receiver.toml).
 */

import { CountingD1 } from "../fixtures/bindings";
import type { Env } from "../src/env";
import worker from "../src/index";
import type { QueueMessage, ReconcileJob } from "../src/queue/messages";

let counting: CountingD1 | null = null;
let countingApply: CountingD1 | null = null;
let wrappedApply: Env | null = null;
// One wrapped env for the isolate, as workerd passes the same env to every request: a fresh
// object per request would defeat the caches keyed by env (parsed configuration).
let wrapped: Env | null = null;

export default {
	async fetch(request: Request, env: Env & { BENCH_ONLY?: string }, ctx: ExecutionContext): Promise<Response> {
		const url = new URL(request.url);
		if (url.pathname === "/__bench/setup") {
			// Runs whatever SQL it is sent: only under bench/wrangler.receiver.toml (BENCH_ONLY), whose
			// Worker and database names are its own, never the deployable wrangler.toml.
			if (env.BENCH_ONLY !== "1") return new Response(null, { status: 404 });
			const { queries } = (await request.json()) as { queries: string[] };
			for (const q of queries) await env.DB.prepare(q).run();
			return Response.json({ ok: true });
		}
		counting ??= new CountingD1(env.DB, false);
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
	async queue(batch: MessageBatch<QueueMessage | ReconcileJob>, env: Env, ctx: ExecutionContext): Promise<void> {
		countingApply ??= new CountingD1(env.DB, false);
		wrappedApply ??= { ...env, DB: countingApply.asD1() };
		return worker.queue(batch, wrappedApply, ctx);
	},
	scheduled: worker.scheduled,
} satisfies ExportedHandler<Env, QueueMessage | ReconcileJob>;
