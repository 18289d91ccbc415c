/** Routes `POST /webhooks/:provider` (and `/:provider/:token` when WEBHOOK_PATH_TOKEN is set). */
import { Hono } from "hono";
import type { AppEnv } from "../app";
import { timingSafeEqualString } from "../crypto/hmac";
import { getProvider } from "../providers";
import { observe } from "./observe";
import { receive } from "./receive";

/** Seconds a sender should wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 10;

export function ingressRoutes(): Hono<AppEnv> {
	const app = new Hono<AppEnv>();

	app.post("/:provider/:token?", async (c) => {
		const started = Date.now();
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

		const clientIp = c.req.header("cf-connecting-ip") ?? null;
		const waitUntil = (p: Promise<unknown>) => c.executionCtx.waitUntil(p);
		const receipt = await receive(provider, c.req.raw, { env: c.env, config, waitUntil, nowMs: started, clientIp });
		const ackMs = Date.now() - started;
		waitUntil(observe({ env: c.env, provider: provider.name, receipt, ackMs, nowMs: started, clientIp }));
		const headers: Record<string, string> =
			receipt.status === 503 ? { "Retry-After": String(RETRY_AFTER_SECONDS) } : {};
		return c.body(null, receipt.status as 200, headers);
	});

	app.all("/:provider/:token?", (c) =>
		getProvider(c.req.param("provider")) ? c.body(null, 405, { Allow: "POST" }) : c.body(null, 404),
	);
	return app;
}
