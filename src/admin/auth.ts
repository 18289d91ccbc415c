/**
 * Admin is off (404) without ADMIN_TOKEN; with it, `Authorization: Bearer <token>` (the scheme in
 * any case, RFC 9110 11.1), compared in constant time. A failure answers 401 with
 * `WWW-Authenticate: Bearer`, is counted like a rejected webhook (reason admin_auth_failed, seen
 * in /admin/metrics), and, when WEBHOOK_RATE_LIMITER is bound, uses up the client address's budget.
 * A client over its budget gets 503 (never 429) and, in this isolate, its next attempts are
 * refused before the token is compared, so past the limit a guess is not even tried.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../app-env";
import { timingSafeEqualString } from "../crypto/hmac";
import { RETRY_AFTER_SECONDS } from "../ingress/answers";
import { clientKey, overLimit } from "../ingress/limit";
import { noteRejection } from "../ingress/rejections";

/** How long this isolate refuses a client that went over its limit without comparing its token. */
export const ADMIN_BLOCK_MS = 60_000;
/** Bounds the memory the blocked list can take; the oldest entries go first. */
const MAX_BLOCKED = 1_024;
const blockedUntil = new Map<string, number>();

/** The token of an `Authorization: Bearer <token>` header, the scheme matched case-insensitively. */
export function bearerToken(header: string | undefined): string | null {
	const m = /^([A-Za-z]+) +(\S+) *$/.exec(header ?? "");
	return m && m[1]?.toLowerCase() === "bearer" ? (m[2] ?? null) : null;
}

/** True while this isolate refuses `key` without comparing its token (admin API and console login). */
export function isBlocked(key: string, nowMs: number): boolean {
	const until = blockedUntil.get(key);
	if (until !== undefined && until > nowMs) return true;
	if (until !== undefined) blockedUntil.delete(key);
	return false;
}

export function block(key: string, nowMs: number): void {
	blockedUntil.delete(key);
	blockedUntil.set(key, nowMs + ADMIN_BLOCK_MS);
	if (blockedUntil.size > MAX_BLOCKED) {
		const oldest = blockedUntil.keys().next().value;
		if (oldest !== undefined) blockedUntil.delete(oldest);
	}
}

export function adminAuth(): MiddlewareHandler<AppEnv> {
	return async (c, next) => {
		const token = c.get("config").adminToken;
		if (token === null) return c.body(null, 404);
		const nowMs = Date.now();
		const ip = c.req.header("cf-connecting-ip") ?? null;
		const key = clientKey("admin", ip);
		const refuse = (reason: string, status: 401 | 503) => {
			const counted = noteRejection(c.env.DB, { provider: "(admin)", reason, status, size: 0, ip, at: nowMs });
			if (counted) c.executionCtx.waitUntil(counted);
			return status === 401
				? c.json({ error: "unauthorized" }, 401, { "WWW-Authenticate": "Bearer" })
				: c.json({ error: "rate limited" }, 503, { "Retry-After": String(RETRY_AFTER_SECONDS) });
		};

		if (isBlocked(key, nowMs)) return refuse("admin_rate_limited", 503);

		if (timingSafeEqualString(bearerToken(c.req.header("authorization")) ?? "", token)) return next();
		if (await overLimit(c.env.WEBHOOK_RATE_LIMITER, key)) {
			block(key, nowMs);
			return refuse("admin_rate_limited", 503);
		}
		return refuse("admin_auth_failed", 401);
	};
}
