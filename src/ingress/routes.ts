/** Routes `POST /webhooks/:provider` (and `/:provider/:token` when WEBHOOK_PATH_TOKEN is set). */
import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { timingSafeEqualString } from "../crypto/hmac";
import { getProvider } from "../providers";
import { type Ending, RETRY_AFTER_SECONDS } from "./answers";
import { observe } from "./observe";
import { receipt, receive } from "./receive";
/** The provider recorded for a request to a name that is not a provider. */
export const UNKNOWN_PROVIDER = "(unknown)";

export function ingressRoutes(): Hono<AppEnv> {
	const app = new Hono<AppEnv>();

	app.post("/:provider/:token?", async (c) => {
		const started = Date.now();
		const config = c.get("config");
		const env = c.env;
		const clientIp = c.req.header("cf-connecting-ip") ?? null;
		const waitUntil = (p: Promise<unknown>) => c.executionCtx.waitUntil(p);
		const requested = c.req.param("provider");
		const provider = getProvider(requested);
		const token = c.req.param("token");

		// With a path token, only the tokened path exists; without one, only the plain path.
		const refusal: Ending | null = (
			config.webhookPathToken === null
				? token !== undefined
				: !timingSafeEqualString(token ?? "", config.webhookPathToken)
		)
			? "bad_path"
			: !provider
				? "unknown_provider"
				: config.keys[provider.name].length === 0
					? "provider_not_configured"
					: null;
		const result =
			refusal !== null || !provider
				? receipt(refusal ?? "unknown_provider")
				: await receive(provider, c.req.raw, { env, config, waitUntil, nowMs: started, clientIp });
		const ackMs = Date.now() - started;
		// The requested name is input: every unknown name shares one bucket, so random names cannot
		// multiply counter rows (docs/design.md invariant 8).
		const name = provider?.name ?? UNKNOWN_PROVIDER;
		waitUntil(observe({ env, provider: name, receipt: result, ackMs, nowMs: started, clientIp }));
		const headers: Record<string, string> = result.status === 503 ? { "Retry-After": String(RETRY_AFTER_SECONDS) } : {};
		return c.body(null, result.status as 200, headers);
	});

	app.all("/:provider/:token?", (c) =>
		getProvider(c.req.param("provider")) ? c.body(null, 405, { Allow: "POST" }) : c.body(null, 404),
	);
	return app;
}
