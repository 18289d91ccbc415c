import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ACCESS_KEY, FakeBlooBank, fakeApiVars, PRIVATE_KEY_HEX } from "../../fixtures/fake-bloobank";
import { consoleClock, SESSION_TTL_MS } from "../../src/console/session";
import { getConfig } from "../../src/env";
import type { QueueMessage } from "../../src/queue/messages";
import { sweep } from "../../src/sweep/sweep";
import { ALERT_URL } from "../support/alert-target";
import { consume, ingest } from "../support/apply";
import { orderEvent, signedRequest } from "../support/bloobank";
import { SENDERS } from "../support/senders";
import { call, countRows, type Harness, harness, resetDb, rows } from "../support/worker";
import { TEST_SECRETS } from "../vars";

const TOKEN = "console-test-admin-token-0123456789abcdef";
const ORIGIN = "https://receiver.test";
/** Every sender's signature header: no page may show one (they are never stored). */
const SIGNATURE_HEADERS = SENDERS.map((s) => s.signatureHeader.toLowerCase());
const IP = "198.51.100.20";

beforeEach(resetDb);
afterEach(() => {
	consoleClock.now = () => Date.now();
});

function req(path: string, init: RequestInit & { cookie?: string } = {}): Request {
	const headers = new Headers(init.headers);
	headers.set("cf-connecting-ip", headers.get("cf-connecting-ip") ?? IP);
	if (init.cookie) headers.set("cookie", init.cookie);
	return new Request(`${ORIGIN}${path}`, { ...init, headers, redirect: "manual" });
}

function form(fields: Record<string, string>): URLSearchParams {
	return new URLSearchParams(fields);
}

async function login(h: Harness, token = TOKEN, ip = IP): Promise<Response> {
	return call(
		h,
		req("/console/login", {
			method: "POST",
			body: form({ token }),
			headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": ip },
		}),
	);
}

/** Signs in and returns the cookie header to send back. */
async function session(h: Harness): Promise<string> {
	const res = await login(h);
	expect(res.status).toBe(303);
	const set = res.headers.get("set-cookie") ?? "";
	return set.split(";")[0] ?? "";
}

async function page(
	h: Harness,
	path: string,
	cookie: string,
): Promise<{ status: number; html: string; res: Response }> {
	const res = await call(h, req(path, { cookie }));
	return { status: res.status, html: await res.text(), res };
}

/** The CSRF token a page's form carries. */
function csrfOf(html: string): string {
	const m = /name="csrf" value="([^"]+)"/.exec(html);
	if (!m?.[1]) throw new Error("no csrf field on the page");
	return m[1];
}

async function post(
	h: Harness,
	path: string,
	cookie: string,
	fields: Record<string, string>,
	origin: string | null = ORIGIN,
) {
	const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
	if (origin !== null) headers.origin = origin;
	return call(h, req(path, { method: "POST", body: form(fields), headers, cookie }));
}

const PAGES = [
	"/console",
	"/console/deliveries",
	"/console/resources",
	"/console/effects",
	"/console/reconcile",
	"/console/alerts",
	"/console/rejections",
];

describe("console sign-in", () => {
	it("is 404 everywhere, login included, when ADMIN_TOKEN is unset", async () => {
		const h = harness({ ADMIN_TOKEN: "" });
		for (const path of ["/console/login", ...PAGES]) expect((await call(h, req(path))).status).toBe(404);
		expect((await login(h)).status).toBe(404);
	});

	it("sends every page without a session to /console/login with 303", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		for (const path of [...PAGES, "/console/deliveries/bloobank/x", "/console/nope"]) {
			const res = await call(h, req(path));
			expect(res.status, path).toBe(303);
			expect(res.headers.get("location")).toBe("/console/login");
		}
		const posted = await post(h, "/console/reconcile/start", "", { csrf: "x" });
		expect(posted.status).toBe(303);
		expect(await rows("SELECT id FROM reconcile_runs")).toEqual([]);
	});

	it("shows a login form with a token field", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const res = await call(h, req("/console/login"));
		expect(res.status).toBe(200);
		const html = await res.text();
		expect(html).toContain('<form method="post" action="/console/login">');
		expect(html).toContain('name="token"');
	});

	it("answers the right token with 303 to /console and an HttpOnly, Secure, SameSite=Strict cookie on Path=/", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const res = await login(h);
		expect(res.status).toBe(303);
		expect(res.headers.get("location")).toBe("/console");
		const cookie = res.headers.get("set-cookie") ?? "";
		expect(cookie).toMatch(/^console_session=[^;]+;/);
		for (const attr of ["HttpOnly", "Secure", "SameSite=Strict", "Path=/", `Max-Age=${SESSION_TTL_MS / 1000}`])
			expect(cookie).toContain(attr);
		expect(cookie).not.toContain(TOKEN);
		const overview = await page(h, "/console", cookie.split(";")[0] ?? "");
		expect(overview.status).toBe(200);
		expect(overview.html).toContain("<h1>Overview</h1>");
	});

	it("answers a wrong token with 401, no cookie, counted as console_auth_failed", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		for (const token of ["", "wrong", `${TOKEN}x`, TOKEN.slice(0, -1)]) {
			const res = await login(h, token);
			expect(res.status).toBe(401);
			expect(res.headers.get("set-cookie")).toBeNull();
		}
		expect(await rows("SELECT provider, reason, status, ip FROM rejections")).toEqual(
			Array(4).fill({ provider: "(console)", reason: "console_auth_failed", status: 401, ip: IP }),
		);
	});

	it("throttles wrong tokens per client: past the limit 503 even for the right token, other clients unaffected", async () => {
		const used = new Map<string, number>();
		const limiter: RateLimit = {
			limit: async ({ key }) => {
				used.set(key, (used.get(key) ?? 0) + 1);
				return { success: (used.get(key) ?? 0) <= 2 };
			},
		};
		const h = harness({ ADMIN_TOKEN: TOKEN, WEBHOOK_RATE_LIMITER: limiter });
		const ip = "198.51.100.77";
		const answers: number[] = [];
		for (let i = 0; i < 4; i++) answers.push((await login(h, "wrong", ip)).status);
		expect(answers).toEqual([401, 401, 503, 503]);
		const right = await login(h, TOKEN, ip);
		expect(right.status).toBe(503);
		expect(right.headers.get("set-cookie")).toBeNull();
		expect((await login(h, TOKEN, "203.0.113.5")).status).toBe(303);
		expect(Object.fromEntries(used)).toEqual({ "console:198.51.100.77": 3 });
	});
});

describe("console session", () => {
	it("expires after 8 hours: the same cookie then answers 303 to the login", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const t0 = Date.now();
		consoleClock.now = () => t0;
		const cookie = await session(h);
		consoleClock.now = () => t0 + SESSION_TTL_MS - 1;
		expect((await page(h, "/console/alerts", cookie)).status).toBe(200);
		consoleClock.now = () => t0 + SESSION_TTL_MS;
		const expired = await page(h, "/console/alerts", cookie);
		expect(expired.status).toBe(303);
		expect(expired.res.headers.get("location")).toBe("/console/login");
	});

	it("refuses a cookie whose expiry was edited, or that was signed under another admin token", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const cookie = await session(h);
		const [name, value = ""] = cookie.split("=");
		const [id, expires, sig] = value.split(".");
		const extended = `${name}=${id}.${Number(expires) + SESSION_TTL_MS}.${sig}`;
		expect((await page(h, "/console", extended)).status).toBe(303);
		const rotated = harness({ ADMIN_TOKEN: `${TOKEN}-rotated` });
		expect((await page(rotated, "/console", cookie)).status).toBe(303);
		expect((await page(h, "/console", cookie)).status).toBe(200);
	});

	it("signs out: the cookie is cleared", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const cookie = await session(h);
		const csrf = csrfOf((await page(h, "/console", cookie)).html);
		const res = await post(h, "/console/logout", cookie, { csrf });
		expect(res.status).toBe(303);
		expect(res.headers.get("set-cookie")).toMatch(/^console_session=;.*Max-Age=0/);
	});
});

describe("console CSRF", () => {
	it("refuses a state change without the CSRF token, with a wrong one, or from a foreign Origin (403, nothing started)", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const cookie = await session(h);
		const csrf = csrfOf((await page(h, "/console/reconcile", cookie)).html);
		expect((await post(h, "/console/reconcile/start", cookie, {})).status).toBe(403);
		// A different first character: it carries six whole bits of the MAC, so the token always differs
		// (changing the last characters can leave the decoded bytes equal).
		const wrong = `${csrf[0] === "A" ? "B" : "A"}${csrf.slice(1)}`;
		expect((await post(h, "/console/reconcile/start", cookie, { csrf: wrong })).status).toBe(403);
		expect((await post(h, "/console/reconcile/start", cookie, { csrf }, "https://evil.test")).status).toBe(403);
		expect(await rows("SELECT id FROM reconcile_runs")).toEqual([]);
		const ok = await post(h, "/console/reconcile/start", cookie, { csrf });
		expect(ok.status).toBe(303);
		expect(ok.headers.get("location")).toMatch(/^\/console\/reconcile\?done=/);
		expect(await rows("SELECT trigger FROM reconcile_runs")).toEqual([{ trigger: "admin" }]);
	});

	it("ties the CSRF token to the session: another session's token is refused", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const a = await session(h);
		const b = await session(h);
		const csrfA = csrfOf((await page(h, "/console", a)).html);
		expect((await post(h, "/console/reconcile/start", b, { csrf: csrfA })).status).toBe(403);
	});

	it("refuses a login POST from a foreign Origin", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const res = await call(
			h,
			req("/console/login", {
				method: "POST",
				body: form({ token: TOKEN }),
				headers: { origin: "https://evil.test", "content-type": "application/x-www-form-urlencoded" },
			}),
		);
		expect(res.status).toBe(403);
		expect(res.headers.get("set-cookie")).toBeNull();
	});
});

describe("console pages", () => {
	it("serves every page with a strict CSP and no reference to another host", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const cookie = await session(h);
		for (const path of ["/console/login", ...PAGES]) {
			const { status, html, res } = await page(h, path, cookie);
			expect(status, path).toBe(200);
			const csp = res.headers.get("content-security-policy") ?? "";
			expect(csp).toMatch(
				/^default-src 'none'; style-src 'nonce-[A-Za-z0-9+/=]+'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/,
			);
			expect(html).not.toMatch(/<script/i);
			// Every src/href/action is a path on this origin (or a fragment).
			for (const m of html.matchAll(/\b(?:src|href|action)="([^"]*)"/g)) expect(m[1], path).toMatch(/^(\/|#|data:)/);
		}
	});

	it("replays a delivery from its page: 303 back with a flash, the row queued again under its message id", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const msg = await ingest(h, "msg-console-1", { id: "ord-c1", ordVersion: 1, status: "SUCCESS" });
		await consume(h, [msg]);
		const cookie = await session(h);
		const detail = await page(h, "/console/deliveries/bloobank/msg-console-1", cookie);
		expect(detail.status).toBe(200);
		expect(detail.html).toContain('action="/console/deliveries/bloobank/msg-console-1/replay"');
		const sentBefore = h.events.sent.length;
		const res = await post(h, "/console/deliveries/bloobank/msg-console-1/replay", cookie, {
			csrf: csrfOf(detail.html),
		});
		expect(res.status).toBe(303);
		expect(res.headers.get("location")).toBe("/console/deliveries/bloobank/msg-console-1?done=replayed");
		expect(h.events.sent.slice(sentBefore)).toEqual([expect.objectContaining({ kind: "delivery" })]);
		expect(await rows("SELECT status FROM deliveries WHERE message_id = 'msg-console-1'")).toEqual([
			{ status: "enqueued" },
		]);
		const flashed = await page(h, res.headers.get("location") ?? "", cookie);
		expect(flashed.html).toContain("Replayed");
	});

	it("finds a resource and lists the deliveries that built it in version order, marking the stale one", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const v2 = await ingest(h, "msg-r-2", { id: "ord-r", ordVersion: 2, status: "SUCCESS" });
		await consume(h, [v2]);
		const v1 = await ingest(h, "msg-r-1", { id: "ord-r", ordVersion: 1, status: "PROCESSING" });
		await consume(h, [v1]);
		const cookie = await session(h);
		const found = await call(h, req("/console/resources?provider=bloobank&type=payment_order&id=ord-r", { cookie }));
		expect(found.status).toBe(303);
		const location = found.headers.get("location") ?? "";
		expect(location).toBe("/console/resources/bloobank/payment_order/ord-r?wallet=w1");
		const { html } = await page(h, location, cookie);
		expect(html).toContain("<strong>SUCCESS</strong>");
		const first = html.indexOf("msg-r-1");
		const second = html.indexOf("msg-r-2");
		expect(first).toBeGreaterThan(0);
		expect(second).toBeGreaterThan(first);
		expect(html).toContain("stale (older than the stored version, not applied)");
	});

	it("records the provider's event time at ingress, so the delivery page shows the end-to-end lag", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const msg = await ingest(h, "msg-lag", { id: "ord-lag", ordVersion: 1, status: "SUCCESS" });
		await consume(h, [msg]);
		const [row] = await rows<{ event_at: number }>("SELECT event_at FROM deliveries WHERE message_id = 'msg-lag'");
		expect(row?.event_at).toBe(Date.parse(orderEvent("x", { id: "x", ordVersion: 1, status: "SUCCESS" }).occurredAt));
		const { html } = await page(h, "/console/deliveries/bloobank/msg-lag", await session(h));
		expect(html).toContain("Event happened (provider&#39;s time)");
		expect(html).toMatch(/lag \d/);
	});
});

describe("console charts", () => {
	it("draws ack latency p99 by nearest rank: 100 answers of 1..100 ms give p99 99 ms, and a lone sample is its own p99", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const now = Date.now();
		const hourStart = now - (now % 3_600_000);
		await rows(
			`INSERT INTO deliveries (provider, message_id, event, status, body_bytes, received_at, status_at, ack_ms)
       SELECT 'bloobank', 'ack-' || value, 'e', 'processed', 1, ?1, ?1, value FROM json_each(?2)`,
			hourStart,
			JSON.stringify(Array.from({ length: 100 }, (_, i) => i + 1)),
		);
		await rows(
			`INSERT INTO deliveries (provider, message_id, event, status, body_bytes, received_at, status_at, ack_ms)
       VALUES ('bloobank', 'ack-lone', 'e', 'processed', 1, ?1, ?1, 1234)`,
			hourStart - 3_600_000,
		);
		const { html } = await page(h, "/console", await session(h));
		expect(html).toContain("101 deliveries; worst hourly p99 1.2 s.");
		await rows("DELETE FROM deliveries WHERE message_id = 'ack-lone'");
		expect((await page(h, "/console", await session(h))).html).toContain("100 deliveries; worst hourly p99 99 ms.");
	});
});

describe("no secret on any console page", () => {
	it("renders every page, with every secret configured and signed traffic stored, without a secret or a signature header value", async () => {
		const PATH_TOKEN = "console-test-path-token-0123456789abcdefgh";
		const h = harness({
			ADMIN_TOKEN: TOKEN,
			WEBHOOK_PATH_TOKEN: PATH_TOKEN,
			BLOOBANK_ACCESS_KEY: ACCESS_KEY,
			BLOOBANK_PRIVATE_KEY: PRIVATE_KEY_HEX,
			ALERT_WEBHOOK_URL: ALERT_URL,
		});
		const signatures: string[] = [];
		for (const sender of SENDERS) {
			const messageId = `secret-check-${sender.name}`;
			const body = sender.event(messageId, `res-${sender.name}`, 1, "SUCCESS");
			const headers = await sender.headers(body, { messageId });
			const sig = headers[sender.signatureHeader];
			if (sig)
				signatures.push(
					sig,
					...sig
						.split(/[ ,]/)
						.flatMap((p) => p.split("=").slice(1))
						.filter((s) => s.length >= 16),
				);
			const res = await call(
				h,
				new Request(`${ORIGIN}/webhooks/${sender.name}/${PATH_TOKEN}`, {
					method: "POST",
					headers: { "content-type": "application/json", ...headers },
					body,
				}),
			);
			expect(res.status, sender.name).toBe(200);
		}
		// A rejected request too, so the rejections page has a sample.
		const forged = await signedRequest(orderEvent("forged", { id: "o", ordVersion: 1, status: "SUCCESS" }), {
			secret: "not-the-secret-0123456789abcdef",
			path: `/webhooks/bloobank/${PATH_TOKEN}`,
		});
		signatures.push(forged.headers.get("x-bloobank-signature") ?? "");
		expect((await call(h, forged)).status).toBe(401);
		await consume(h, [...h.events.sent]);

		const cookie = await session(h);
		const secrets = [
			TOKEN,
			PATH_TOKEN,
			ACCESS_KEY,
			PRIVATE_KEY_HEX,
			ALERT_URL,
			"alert-url-secret-token",
			...Object.values(TEST_SECRETS).flat(),
			// The base64 payload of the whsec_ secrets, as decoded keys could be shown.
			...TEST_SECRETS.standard.map((s) => s.slice("whsec_".length)),
			...signatures,
		];
		const paths = [
			"/console/login",
			...PAGES,
			...SENDERS.map((s) => `/console/deliveries/${s.name}/secret-check-${s.name}`),
			"/console/resources/bloobank/payment_order/res-bloobank",
			"/console/resources/pazy/payment/res-pazy",
			"/console/deliveries?messageId=secret-check-bloobank",
		];
		for (const path of paths) {
			const { status, html, res } = await page(h, path, cookie);
			expect(status, path).toBeLessThan(400);
			const everything = `${[...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n")}\n${html}`;
			for (const secret of secrets)
				expect(everything.includes(secret), `${path} shows ${secret.slice(0, 12)}…`).toBe(false);
			for (const header of SIGNATURE_HEADERS) expect(everything.toLowerCase(), path).not.toContain(header);
		}
		expect(await countRows("deliveries WHERE status = 'processed'")).toBe(SENDERS.length);
	});
});

describe("Check with BlooBank", () => {
	let fake: FakeBlooBank;
	beforeEach(() => {
		fake = new FakeBlooBank();
		vi.spyOn(globalThis, "fetch").mockImplementation(fake.fetch);
	});
	afterEach(() => vi.restoreAllMocks());
	const apiHarness = () => harness({ ADMIN_TOKEN: TOKEN, ...fakeApiVars() });

	it("the resource page's button fetches the order from BlooBank and queues it for the one writer", async () => {
		const h = apiHarness();
		await consume(h, [await ingest(h, "chk-1", { id: "ord_chk", ordVersion: 1, status: "PENDING", amount: 70 })]);
		fake.seed(1, () => ({ id: "ord_chk", ordVersion: 3, status: "SUCCESS", amount: 70 }));
		const cookie = await session(h);
		const resourcePath = "/console/resources/bloobank/payment_order/ord_chk?wallet=w1";
		const { html } = await page(h, resourcePath, cookie);
		expect(html).toContain("Check with BlooBank");
		const action = /action="([^"]*\/check[^"]*)"/.exec(html)?.[1]?.replace(/&amp;/g, "&");
		if (!action) throw new Error("no check form");
		const res = await post(h, action, cookie, { csrf: csrfOf(html) });
		expect(res.status).toBe(303);
		expect(res.headers.get("location")).toContain("done=checked");
		const queued = h.events.sent.at(-1) as QueueMessage;
		expect(queued).toMatchObject({ kind: "snapshot", resource: { id: "ord_chk", version: 3, status: "SUCCESS" } });
		await consume(h, [queued]);
		expect(await rows("SELECT version, status FROM resources")).toEqual([{ version: 3, status: "SUCCESS" }]);
		// Without its CSRF token the same POST changes nothing.
		expect((await post(h, action, cookie, {})).status).toBe(403);
	});

	it("a check posted for a sender or type no API serves asks no API and queues nothing", async () => {
		const h = apiHarness();
		fake.seed(1, () => ({ id: "p-1" }));
		const cookie = await session(h);
		const { html } = await page(h, "/console/resources", cookie);
		for (const action of [
			"/console/resources/pazy/payment/p-1/check?wallet=w1",
			"/console/resources/bloobank/payment/p-1/check?wallet=w1",
		]) {
			const res = await post(h, action, cookie, { csrf: csrfOf(html) });
			expect(res.status, action).toBe(303);
			expect(res.headers.get("location"), action).toContain("done=check_not_found");
		}
		expect(fake.requests).toEqual([]);
		expect(h.events.sent).toEqual([]);
	});
});

describe("overview: secret rotation and the last sweep", () => {
	it("counts deliveries verified by each secret but the first, by position, and says when the old one can go", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const cookie = await session(h);
		expect((await page(h, "/console", cookie)).html).toContain("none in 7 days: can go");
		const old = TEST_SECRETS.bloobank[1];
		expect(
			(
				await call(
					h,
					await signedRequest(orderEvent("rot-1", { id: "o-rot", ordVersion: 1, status: "PENDING" }), { secret: old }),
				)
			).status,
		).toBe(200);
		expect(
			(await call(h, await signedRequest(orderEvent("rot-2", { id: "o-rot", ordVersion: 2, status: "PENDING" }))))
				.status,
		).toBe(200);
		expect(await rows("SELECT message_id, secret_position FROM deliveries ORDER BY id")).toEqual([
			{ message_id: "rot-1", secret_position: 1 },
			{ message_id: "rot-2", secret_position: 0 },
		]);
		const { html } = await page(h, "/console", cookie);
		expect(html).toMatch(/bloobank #2<\/dt>\s*<dd class="warn">1 deliveries, last \d+ s ago/);
		expect(html).not.toContain(old);
	});

	it("shows when the sweep last ran", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		const cookie = await session(h);
		expect((await page(h, "/console", cookie)).html).toContain("never (the cron has not run)");
		await sweep(h.env, getConfig(h.env), Date.now());
		expect(await rows("SELECT name FROM heartbeats WHERE name = 'sweep'")).toEqual([{ name: "sweep" }]);
		expect((await page(h, "/console", cookie)).html).not.toContain("never (the cron has not run)");
	});
});
