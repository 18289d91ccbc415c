/**
 * The receiver as deployed (src/index.ts) with its D1 binding behind a round-trip counter, plus
 * bench-only routes to migrate and to seed deliveries in bulk, for npm run bench:console (config
 * bench/wrangler.console.toml). Not part of the deployed Worker.
 */

import { CountingD1 } from "../fixtures/bindings";
import type { Env } from "../src/env";
import worker from "../src/index";
import { PROVIDER_NAMES } from "../src/providers";
import type { QueueMessage, ReconcileJob } from "../src/queue/messages";
import { BENCH_RESOURCE_TYPE, BENCH_SENDER, benchDelivery, benchState, storedAs } from "./sender";

let counting: CountingD1 | null = null;
let wrapped: Env | null = null;

const STATUSES = [
	...Array(90).fill("processed"),
	...Array(5).fill("stale"),
	...Array(3).fill("ignored"),
	"failed",
	"enqueued",
];

/**
 * Seeds `count` deliveries with ids `from..`, received over the 24 h before `nowMs`, in one
 * statement. Spread over every registered sender; each carries the event name and resource type
 * of the bench's sender (`event`, BENCH_RESOURCE_TYPE).
 */
function seedStatement(db: D1Database, from: number, count: number, nowMs: number, event: string): D1PreparedStatement {
	return db
		.prepare(
			`WITH RECURSIVE n(i) AS (SELECT CAST(?1 AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < CAST(?1 AS INTEGER) + CAST(?2 AS INTEGER) - 1)
       INSERT INTO deliveries (provider, message_id, event, status, raw_body, body_bytes, resource_type,
         resource_wallet, resource_id, resource_version, received_at, status_at, attempts, duplicates,
         processed_at, ack_ms, event_at)
       SELECT json_extract(?4, '$[' || (i % json_array_length(?4)) || ']'), 'bench-' || i, ?6,
         json_extract(?5, '$[' || (i % 100) || ']'),
         json_object('event', ?6, 'messageId', 'bench-' || i,
           'data', json_object('id', 'ord-' || (i / 3), 'wallet', 'w1', 'ordVersion', 1 + i % 3, 'status', 'SUCCESS',
             'amount', 1000 + i, 'currency', 'BRL', 'direction', 'IN')),
         220, ?7, 'w1', 'ord-' || (i / 3), 1 + i % 3,
         CAST(?3 AS INTEGER) - (i * 86400000 / 100000) % 86400000, CAST(?3 AS INTEGER) - (i * 86400000 / 100000) % 86400000 + 40,
         1, i % 50 = 0, CAST(?3 AS INTEGER) - (i * 86400000 / 100000) % 86400000 + 300, 5 + abs(random() % 60),
         CAST(?3 AS INTEGER) - (i * 86400000 / 100000) % 86400000 - 200 - abs(random() % 2000)
       FROM n`,
		)
		.bind(from, count, nowMs, JSON.stringify(PROVIDER_NAMES), JSON.stringify(STATUSES), event, BENCH_RESOURCE_TYPE);
}

export default {
	async fetch(request: Request, env: Env & { BENCH_ONLY?: string }, ctx: ExecutionContext): Promise<Response> {
		const url = new URL(request.url);
		if (url.pathname.startsWith("/__bench/")) {
			// Writes whatever it is asked to: only under bench/wrangler.console.toml (BENCH_ONLY).
			if (env.BENCH_ONLY !== "1") return new Response(null, { status: 404 });
			if (url.pathname === "/__bench/setup") {
				const { queries } = (await request.json()) as { queries: string[] };
				for (const q of queries) await env.DB.prepare(q).run();
				return Response.json({ ok: true });
			}
			if (url.pathname === "/__bench/seed") {
				const from = Number(url.searchParams.get("from"));
				const count = Number(url.searchParams.get("count"));
				const nowMs = Number(url.searchParams.get("now"));
				// The event name the bench's sender gives a settled resource, as its parser reads it.
				const sample = await benchDelivery("bench-0", benchState("ord-0", 1, "SUCCESS", nowMs), nowMs);
				const event = storedAs(sample, env)?.event ?? "";
				await env.DB.batch([
					seedStatement(env.DB, from, count, nowMs, event),
					// One resource for the resource page; its deliveries are bench-300..302.
					env.DB.prepare(
						`INSERT OR IGNORE INTO resources (provider, type, id, wallet, version, status, data, updated_at, source)
             VALUES (?2, ?3, 'ord-100', 'w1', 3, 'SUCCESS', '{"id":"ord-100"}', ?1, 'webhook')`,
					).bind(nowMs, BENCH_SENDER.name, BENCH_RESOURCE_TYPE),
				]);
				return Response.json({ ok: true });
			}
			if (url.pathname === "/__bench/d1") {
				const figures = { roundTrips: counting?.roundTrips ?? 0, statements: counting?.statementCount ?? 0 };
				if (counting) {
					counting.roundTrips = 0;
					counting.statementCount = 0;
				}
				return Response.json(figures);
			}
			return new Response(null, { status: 404 });
		}
		counting ??= new CountingD1(env.DB, false);
		wrapped ??= { ...env, DB: counting.asD1() };
		return worker.fetch(request, wrapped, ctx);
	},
	queue: worker.queue,
	scheduled: worker.scheduled,
} satisfies ExportedHandler<Env, QueueMessage | ReconcileJob>;
