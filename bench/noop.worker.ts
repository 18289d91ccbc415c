/**
 * The physical limits of this runtime on this machine (npm run bench): `/noop` reads the body and
 * answers 200; `/d1` also makes the one D1 write that store-before-ack cannot skip.
 */
interface NoopEnv {
	DB: D1Database;
}

let ready: Promise<unknown> | null = null;

export default {
	async fetch(request: Request, env: NoopEnv): Promise<Response> {
		const body = await request.text();
		if (new URL(request.url).pathname.endsWith("/d1")) {
			ready ??= env.DB.prepare("CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, body TEXT)").run();
			await ready;
			await env.DB.prepare("INSERT INTO floor (body) VALUES (?1)").bind(body).run();
		}
		return new Response(null, { status: 200 });
	},
};
