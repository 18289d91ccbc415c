/** The HTTP surface: webhooks, health, admin. One error handler maps the unexpected to 5xx. */
import { Hono } from "hono";
import { adminRoutes } from "./admin/routes";
import { type Config, ConfigError, type Env, getConfig } from "./env";
import { ingressRoutes } from "./ingress/routes";
import { errorMessage, log } from "./log";

export interface AppEnv {
	Bindings: Env;
	Variables: { config: Config };
}

export function createApp(): Hono<AppEnv> {
	const app = new Hono<AppEnv>();

	app.get("/healthz", (c) => c.json({ ok: true }));

	app.use("*", async (c, next) => {
		c.set("config", getConfig(c.env));
		await next();
	});

	app.route("/webhooks", ingressRoutes());
	app.route("/admin", adminRoutes());

	app.notFound((c) => c.body(null, 404));
	app.onError((err, c) => {
		// A 5xx is always safe for a sender: it retries. A configuration error is ours to fix.
		log("error", err instanceof ConfigError ? "config_error" : "unhandled_error", {
			// The route pattern, not the URL: a URL may carry WEBHOOK_PATH_TOKEN.
			route: c.req.routePath,
			error: errorMessage(err),
		});
		return c.body(null, 500);
	});
	return app;
}
