/** Admin is off (404) without ADMIN_TOKEN; with it, a bearer token compared in constant time. */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../app";
import { timingSafeEqualString } from "../crypto/hmac";

export function adminAuth(): MiddlewareHandler<AppEnv> {
	return async (c, next) => {
		const token = c.get("config").adminToken;
		if (token === null) return c.body(null, 404);
		const header = c.req.header("authorization") ?? "";
		const presented = header.startsWith("Bearer ") ? header.slice("Bearer ".length) : "";
		if (!timingSafeEqualString(presented, token)) return c.json({ error: "unauthorized" }, 401);
		await next();
	};
}
