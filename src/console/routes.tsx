/**
 * The operator console (docs/design.md, operator console): HTML pages over the admin reads, a
 * signed session cookie, a CSRF token on every form, a strict CSP. Off (404) without ADMIN_TOKEN.
 */
import { Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { block, isBlocked } from "../admin/auth";
import { timingSafeEqualString } from "../crypto/hmac";
import { RETRY_AFTER_SECONDS } from "../ingress/answers";
import { clientKey, overLimit } from "../ingress/limit";
import { noteRejection } from "../ingress/rejections";
import type { ConsoleContext, ConsoleEnv } from "./env";
import { contentSecurityPolicy, Page } from "./layout";
import { pageRoutes } from "./pages";
import { consoleClock, createSession, csrfToken, readSession, SESSION_COOKIE, SESSION_TTL_MS } from "./session";

function nonce(): string {
	return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
}

/** A POST from a page of another origin (a browser always sends Origin on a form POST). */
function foreignOrigin(c: ConsoleContext): boolean {
	const origin = c.req.header("origin");
	if (origin === undefined) return c.req.header("sec-fetch-site") === "cross-site";
	let host: string;
	try {
		host = new URL(origin).host;
	} catch {
		return true;
	}
	// The Host header too: a local proxy (wrangler dev) may rewrite the URL's host, and a browser,
	// the only client a CSRF attack can use, always sends the Host it connected to.
	return host !== new URL(c.req.url).host && host !== c.req.header("host");
}

function LoginPage(p: { nonce: string; error?: string }) {
	return (
		<Page
			title="Sign in"
			nonce={p.nonce}
			path="/console/login"
			signedIn={false}
			flash={p.error ? { text: p.error, error: true } : null}
		>
			<form method="post" action="/console/login">
				<p>
					<label for="token">
						Admin token
						<input
							id="token"
							name="token"
							type="password"
							autocomplete="current-password"
							required
							autofocus
							size={48}
						/>
					</label>
				</p>
				<p>
					<button type="submit">Sign in</button>
				</p>
			</form>
		</Page>
	);
}

export function consoleRoutes(): Hono<ConsoleEnv> {
	const app = new Hono<ConsoleEnv>();

	app.use("*", async (c, next) => {
		const token = c.get("config").adminToken;
		if (token === null) return c.body(null, 404);
		c.set("adminToken", token);
		c.set("nonce", nonce());
		await next();
		c.header("Content-Security-Policy", contentSecurityPolicy(c.get("nonce")));
		c.header("X-Content-Type-Options", "nosniff");
		// same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on our own form POSTs.
		c.header("Referrer-Policy", "same-origin");
		c.header("Cache-Control", "no-store");
		c.header("X-Frame-Options", "DENY");
	});

	app.get("/login", (c) => c.html(<LoginPage nonce={c.get("nonce")} />));

	app.post("/login", async (c) => {
		if (foreignOrigin(c)) return c.text("Forbidden: foreign origin", 403);
		const nowMs = consoleClock.now();
		const ip = c.req.header("cf-connecting-ip") ?? null;
		const key = clientKey("console", ip);
		const refuse = (reason: string, status: 401 | 503) => {
			const counted = noteRejection(c.env.DB, { provider: "(console)", reason, status, size: 0, ip, at: nowMs });
			if (counted) c.executionCtx.waitUntil(counted);
			const error = status === 401 ? "That token is not the admin token." : "Too many attempts; try again later.";
			const headers: Record<string, string> = status === 503 ? { "Retry-After": String(RETRY_AFTER_SECONDS) } : {};
			return c.html(<LoginPage nonce={c.get("nonce")} error={error} />, status, headers);
		};
		// Past the limit a guess is not even compared (as for the admin API, src/admin/auth.ts).
		if (isBlocked(key, nowMs)) return refuse("console_rate_limited", 503);
		const form = await c.req.parseBody();
		const token = typeof form.token === "string" ? form.token : "";
		if (!timingSafeEqualString(token, c.get("adminToken"))) {
			if (await overLimit(c.env.WEBHOOK_RATE_LIMITER, key)) {
				block(key, nowMs);
				return refuse("console_rate_limited", 503);
			}
			return refuse("console_auth_failed", 401);
		}
		const { cookie } = await createSession(c.get("adminToken"), nowMs);
		setCookie(c, SESSION_COOKIE, cookie, {
			httpOnly: true,
			secure: true,
			sameSite: "Strict",
			path: "/",
			maxAge: SESSION_TTL_MS / 1000,
		});
		return c.redirect("/console", 303);
	});

	// Every other page: a valid session, and for a POST a same-origin request carrying its CSRF token.
	app.use("*", async (c, next) => {
		const session = await readSession(c.get("adminToken"), getCookie(c, SESSION_COOKIE), consoleClock.now());
		if (session === null) return c.redirect("/console/login", 303);
		c.set("session", session);
		const csrf = await csrfToken(c.get("adminToken"), session);
		c.set("csrf", csrf);
		if (c.req.method === "POST") {
			if (foreignOrigin(c)) return c.text("Forbidden: foreign origin", 403);
			const form = await c.req.parseBody();
			const sent = typeof form.csrf === "string" ? form.csrf : "";
			if (!timingSafeEqualString(sent, csrf)) return c.text("Forbidden: missing or wrong CSRF token", 403);
		}
		await next();
	});

	app.post("/logout", (c) => {
		setCookie(c, SESSION_COOKIE, "", { httpOnly: true, secure: true, sameSite: "Strict", path: "/", maxAge: 0 });
		return c.redirect("/console/login", 303);
	});

	app.route("/", pageRoutes());
	return app;
}
