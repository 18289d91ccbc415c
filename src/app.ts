/** The HTTP surface: webhooks, health, admin. One error handler maps the unexpected to 5xx. */
import { Hono } from "hono";
import { adminRoutes } from "./admin/routes";
import type { AppEnv } from "./app-env";
import { consoleRoutes } from "./console/routes";
import { isMissingSchema, MIGRATIONS_HINT, schemaProblem } from "./db/health";
import { fanOut, layoutHolds } from "./db/shards";
import { ConfigError, type Env, getShards, getWebhookConfig, isLoopbackHost, type WebhookConfig } from "./env";
import { RETRY_AFTER_SECONDS } from "./ingress/answers";
import { noteRejection } from "./ingress/rejections";
import { ingressRoutes } from "./ingress/routes";
import { errorMessage, log } from "./log";

export type { AppEnv } from "./app-env";

/**
 * The configuration as this request may use it. A value published in this repository or a spec
 * (see PUBLISHED_VALUES) is a configuration error unless the request comes to localhost: a
 * deployed receiver must not run on a secret everyone can read (docs/design.md, configuration).
 */
function requestConfig(env: Env, request: Request): WebhookConfig {
	const config = getWebhookConfig(env);
	getShards(env);
	const published = config.publishedValues[0];
	// Both the URL and the client: behind Cloudflare's edge CF-Connecting-IP is always set, so a
	// spoofed Host alone does not pass; locally (wrangler dev) it is absent or loopback.
	const client = request.headers.get("cf-connecting-ip");
	const local =
		isLoopbackHost(new URL(request.url).hostname) &&
		(client === null || client === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(client));
	if (published !== undefined && !local) {
		throw new ConfigError(published, "holds a published development value; set your own");
	}
	return config;
}

export function createApp(): Hono<AppEnv> {
	const app = new Hono<AppEnv>();

	// Healthy only when the configuration parses (the variable's name, never its value) and the
	// database has the schema the code uses ("migrations") and answers ("d1").
	app.get("/healthz", async (c) => {
		try {
			requestConfig(c.env, c.req.raw);
		} catch (err) {
			if (!(err instanceof ConfigError)) throw err;
			return c.json({ ok: false, error: err.variable }, 503);
		}
		const shards = getShards(c.env);
		const problems = await fanOut(shards, (s) => schemaProblem(s.db));
		const problem = problems.find((p) => p !== null) ?? null;
		if (problem !== null) return c.json({ ok: false, error: problem }, 503);
		// A reordered or grown DB_SHARDS is a configuration error (src/db/shards.ts).
		const holds = await layoutHolds(shards, Date.now()).catch(() => "d1" as const);
		if (holds === "d1") return c.json({ ok: false, error: "d1" }, 503);
		if (!holds) return c.json({ ok: false, error: "DB_SHARDS" }, 503);
		return c.json({ ok: true });
	});

	app.use("*", async (c, next) => {
		c.set("config", requestConfig(c.env, c.req.raw));
		await next();
	});

	app.route("/webhooks", ingressRoutes());
	app.route("/admin", adminRoutes());
	app.route("/console", consoleRoutes());

	app.notFound((c) => c.body(null, 404));
	app.onError((err, c) => {
		// The route pattern, not the URL: a URL may carry WEBHOOK_PATH_TOKEN.
		const route = c.req.routePath;
		if (err instanceof ConfigError) {
			// Ours to fix, so never a 4xx: a sender retries a 503 until the merchant fixes it. Counted
			// like a rejection, so the sweep's `config_error` alert fires even when only requests see
			// the problem (a published development value on a deployed receiver).
			log("error", "config_error", { route, variable: err.variable, error: err.message });
			const counted = noteRejection(c.env.DB, {
				provider: "(config)",
				reason: "config_error",
				status: 503,
				size: 0,
				ip: c.req.header("cf-connecting-ip") ?? null,
				at: Date.now(),
			});
			if (counted) c.executionCtx.waitUntil(counted);
			return c.body(null, 503, { "Retry-After": String(RETRY_AFTER_SECONDS) });
		}
		if (isMissingSchema(err)) {
			log("error", "migrations_not_applied", { route, hint: MIGRATIONS_HINT, error: errorMessage(err) });
			return c.json({ error: "migrations", hint: MIGRATIONS_HINT }, 503, {
				"Retry-After": String(RETRY_AFTER_SECONDS),
			});
		}
		log("error", "unhandled_error", { route, error: errorMessage(err) });
		return c.body(null, 500);
	});
	return app;
}
