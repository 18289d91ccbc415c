/**
 * The physical limits of this runtime on this machine (npm run bench). `/noop` reads the body and
 * answers 200. `/d1` also makes the one D1 write that store-before-ack cannot skip (invariant 2).
 * `/d1-send` also sends one queue message before answering, as the flow requires (docs/design.md, the
 * flow: ingress sends the pointer, then answers 2xx; invariant 3): the least any receiver built to
 * docs/design.md can do per new delivery.
 */
interface NoopEnv {
	DB: D1Database;
	EVENTS: Queue<{ id: number }>;
}

let ready: Promise<unknown> | null = null;

export default {
	async fetch(request: Request, env: NoopEnv): Promise<Response> {
		const body = await request.text();
		const path = new URL(request.url).pathname;
		if (path === "/d1" || path === "/d1-send") {
			ready ??= env.DB.prepare("CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, body TEXT)").run();
			await ready;
			const row = await env.DB.prepare("INSERT INTO floor (body) VALUES (?1) RETURNING id")
				.bind(body)
				.first<{ id: number }>();
			if (path === "/d1-send") await env.EVENTS.send({ id: row?.id ?? 0 });
		}
		return new Response(null, { status: 200 });
	},
	// Consumes what /d1-send produced, so the floor carries a consumer like the receiver does.
	async queue(batch: MessageBatch<{ id: number }>): Promise<void> {
		batch.ackAll();
	},
} satisfies ExportedHandler<NoopEnv, { id: number }>;
