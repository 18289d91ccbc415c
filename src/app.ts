/** The HTTP surface: webhooks, health, admin. One error handler maps the unexpected to 5xx. */
import { Hono } from "hono";
import { adminRoutes } from "./admin/routes";
import type { AppEnv } from "./app-env";
import { consoleRoutes } from "./console/routes";
import { ConfigError, type Env, getWebhookConfig, isLoopbackHost, type WebhookConfig } from "./env";
import { RETRY_AFTER_SECONDS } from "./ingress/answers";
import { ingressRoutes } from "./ingress/routes";
import { errorMessage, log } from "./log";

export type { AppEnv } from "./app-env";

/**
 * The configuration as this request may use it. A value published in this repository or a spec
 * (see PUBLISHED_VALUES) is a configuration error unless the request comes to localhost: a
 * deployed receiver must not run on a secret everyone can read (docs/design.md, configuration).
 */
function requestConfig(env: Env, url: string): WebhookConfig {
	const config = getWebhookConfig(env);
	const published = config.publishedValues[0];
	if (published !== undefined && !isLoopbackHost(new URL(url).hostname)) {
		throw new ConfigError(published, "holds a published development value; set your own");
	}
	return config;
}

export function createApp(): Hono<AppEnv> {
	const app = new Hono<AppEnv>();

	// Healthy only when the configuration parses: the variable's name, never its value.
	app.get("/healthz", (c) => {
		try {
			requestConfig(c.env, c.req.url);
			return c.json({ ok: true });
		} catch (err) {
			if (!(err instanceof ConfigError)) throw err;
			return c.json({ ok: false, error: err.variable }, 503);
		}
	});

	app.use("*", async (c, next) => {
		c.set("config", requestConfig(c.env, c.req.url));
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
			// Ours to fix, so never a 4xx: a sender retries a 503 until the merchant fixes it.
			log("error", "config_error", { route, variable: err.variable, error: err.message });
			return c.body(null, 503, { "Retry-After": String(RETRY_AFTER_SECONDS) });
		}
		log("error", "unhandled_error", { route, error: errorMessage(err) });
		return c.body(null, 500);
	});
	return app;
}
