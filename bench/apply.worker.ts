/**
 * Benchmark Worker for the apply step (npm run bench:apply). It runs inside workerd against local
 * D1, like production code, and compares the batched consumer with a naive one-statement-per-
 * message consumer on the same seeded deliveries. Not part of the deployed Worker.
 */

import { CountingD1 } from "../fixtures/bindings";
import { consumeEvents } from "../src/apply/consumer";
import type { Env } from "../src/env";
import { effectsFor, storedHeaders } from "../src/providers";
import type { QueueMessage } from "../src/queue/messages";
import { QUEUE_NAMES } from "../src/queue/messages";
import { BENCH_SENDER, benchDelivery, benchState, storedAs } from "./sender";

const STATUSES = ["PENDING", "PROCESSING", "SUCCESS", "FAILED"];

/** Seeds `size` deliveries of the bench's sender, one new resource each, as ingress would have stored them. */
async function seed(
	db: D1Database,
	env: Env,
	run: string,
	batch: number,
	size: number,
): Promise<{ id: number; mid: string }[]> {
	const now = Date.now();
	const rows = await Promise.all(
		Array.from({ length: size }, async (_, i) => {
			const mid = `${run}-${batch}-${i}`;
			const state = benchState(
				`ord-${run}-${batch}-${i}`,
				1 + (i % 3),
				STATUSES[i % STATUSES.length] ?? "",
				now,
				1000 + i,
			);
			const delivery = await benchDelivery(mid, state, now);
			const stored = storedAs(delivery, env);
			if (!stored) throw new Error(`${BENCH_SENDER.name} does not parse its own sample body`);
			return { mid, raw: delivery.body, event: stored.event, headers: stored.headers };
		}),
	);
	const { results } = await db
		.prepare(
			`INSERT INTO deliveries (provider, message_id, event, status, raw_body, body_bytes, headers, received_at, status_at)
       SELECT ?3, value->>'mid', value->>'event', 'enqueued', value->>'raw', length(value->>'raw'), value->>'headers', ?2, ?2
       FROM json_each(?1) RETURNING id, message_id AS mid`,
		)
		.bind(JSON.stringify(rows), now, BENCH_SENDER.name)
		.all<{ id: number; mid: string }>();
	return results;
}

function fakeBatch(rows: { id: number; mid: string }[]): MessageBatch<QueueMessage> {
	const messages = rows.map((r, i) => ({
		id: String(i),
		timestamp: new Date(),
		attempts: 1,
		body: { kind: "delivery", deliveryId: r.id, provider: BENCH_SENDER.name, messageId: r.mid } as QueueMessage,
		ack() {},
		retry() {},
	}));
	return { queue: QUEUE_NAMES.events, messages, ackAll() {}, retryAll() {} } as unknown as MessageBatch<QueueMessage>;
}

/** The straightforward consumer most receivers start with: each step is its own statement. */
async function naiveConsume(batch: MessageBatch<QueueMessage>, env: Env): Promise<void> {
	const db = env.DB;
	for (const m of batch.messages) {
		if (m.body.kind !== "delivery") continue;
		const row = await db
			.prepare("SELECT raw_body, headers FROM deliveries WHERE id = ?")
			.bind(m.body.deliveryId)
			.first<{ raw_body: string; headers: string | null }>();
		const parsed = BENCH_SENDER.parse(
			row?.raw_body ?? "",
			storedHeaders(row?.headers ?? null),
			BENCH_SENDER.settings(env),
		);
		if (!parsed.ok || !parsed.event.resource) continue;
		const r = parsed.event.resource;
		await db
			.prepare(
				`INSERT INTO resources (provider, type, id, wallet, version, status, data, updated_at, source)
         VALUES (?8, ?1, ?2, coalesce(?3, ''), ?4, ?5, ?6, ?7, 'webhook')
         ON CONFLICT (provider, type, wallet, id) DO UPDATE SET version = excluded.version, status = excluded.status,
           data = excluded.data, updated_at = excluded.updated_at WHERE excluded.version > resources.version`,
			)
			.bind(r.type, r.id, r.wallet, r.version, r.status, JSON.stringify(r.data), Date.now(), BENCH_SENDER.name)
			.run();
		await db
			.prepare("UPDATE deliveries SET status = 'processed', processed_at = ?2 WHERE id = ?1")
			.bind(m.body.deliveryId, Date.now())
			.run();
		for (const e of effectsFor(BENCH_SENDER, r)) {
			const ins = await db
				.prepare(
					`INSERT INTO effects (provider, resource_type, resource_wallet, resource_id, kind, status, payload, created_at)
           VALUES (?7, ?1, coalesce(?6, ''), ?2, ?3, 'pending', ?4, ?5) ON CONFLICT DO NOTHING RETURNING id`,
				)
				.bind(r.type, r.id, e.kind, JSON.stringify(e.payload), Date.now(), r.wallet, BENCH_SENDER.name)
				.first<{ id: number }>();
			if (!ins) continue;
			if (e.kind === "settled") {
				await db
					.prepare(
						`INSERT INTO settled_totals (currency, count, amount) VALUES (?1, 1, ?2)
             ON CONFLICT (currency) DO UPDATE SET count = count + 1, amount = amount + excluded.amount`,
					)
					.bind(e.payload.currency, e.payload.amount)
					.run();
			}
			await db.prepare("UPDATE effects SET status = 'done', done_at = ?2 WHERE id = ?1").bind(ins.id, Date.now()).run();
		}
		m.ack();
	}
}

export default {
	async fetch(request: Request, env: Env & { BENCH_QUIET?: string; BENCH_ONLY?: string }): Promise<Response> {
		const url = new URL(request.url);
		if (url.pathname === "/setup") {
			// Runs whatever SQL it is sent: only under its bench configuration (BENCH_ONLY in its toml).
			if (env.BENCH_ONLY !== "1") return new Response(null, { status: 404 });
			const { queries } = (await request.json()) as { queries: string[] };
			for (const q of queries) await env.DB.prepare(q).run();
			return Response.json({ ok: true });
		}
		if (url.pathname === "/run") {
			const mode = url.searchParams.get("mode") === "naive" ? "naive" : "batched";
			const size = Number(url.searchParams.get("size") ?? 100);
			const batches = Number(url.searchParams.get("batches") ?? 10);
			const run = `${mode}-${crypto.randomUUID().slice(0, 8)}`;
			let elapsed = 0;
			let roundTrips = 0;
			for (let b = 0; b < batches; b++) {
				const rows = await seed(env.DB, env, run, b, size);
				const db = new CountingD1(env.DB);
				const benchEnv = { ...env, DB: db.asD1() };
				const start = performance.now();
				if (mode === "batched") await consumeEvents(fakeBatch(rows), benchEnv);
				else await naiveConsume(fakeBatch(rows), benchEnv);
				elapsed += performance.now() - start;
				roundTrips += db.roundTrips;
			}
			return Response.json({
				mode,
				size,
				batches,
				events: size * batches,
				elapsedMs: elapsed,
				roundTripsPerBatch: roundTrips / batches,
			});
		}
		return new Response("not found", { status: 404 });
	},
};
