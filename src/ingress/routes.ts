/** Routes `POST /webhooks/:provider` (and `/:provider/:token` when WEBHOOK_PATH_TOKEN is set). */
import { Hono } from "hono";
import type { AppEnv } from "../app";
import { timingSafeEqualString } from "../crypto/hmac";
import { getProvider } from "../providers";
import { receive } from "./receive";

export function ingressRoutes(): Hono<AppEnv> {
	const app = new Hono<AppEnv>();

	app.post("/:provider/:token?", async (c) => {
		const config = c.get("config");
		const token = c.req.param("token");
		// With a path token, only the tokened path exists; without one, only the plain path.
		if (
			config.webhookPathToken === null
				? token !== undefined
				: !timingSafeEqualString(token ?? "", config.webhookPathToken)
		) {
			return c.body(null, 404);
		}
		const provider = getProvider(c.req.param("provider"));
		// A provider without secrets is off: its route does not exist.
		if (!provider || config.secrets[provider.name].length === 0) return c.body(null, 404);
		return receive(provider, c.req.raw, {
			env: c.env,
			config,
			waitUntil: (p) => c.executionCtx.waitUntil(p),
			nowMs: Date.now(),
			clientIp: c.req.header("cf-connecting-ip") ?? null,
		});
	});

	app.all("/:provider/:token?", (c) =>
		getProvider(c.req.param("provider")) ? c.body(null, 405, { Allow: "POST" }) : c.body(null, 404),
	);
	return app;
}
