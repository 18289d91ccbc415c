import { beforeEach, describe, expect, it } from "vitest";
import { limiter } from "../support/limiter";
import { call, type Harness, harness, resetDb, rows } from "../support/worker";

const TOKEN = "admin-test-token-0123456789abcdef0123";
beforeEach(resetDb);

function get(h: Harness, authorization: string | null, ip = "198.51.100.7") {
	const headers = new Headers({ "cf-connecting-ip": ip });
	if (authorization !== null) headers.set("authorization", authorization);
	return call(h, new Request("https://receiver.test/admin/metrics", { headers }));
}

describe("admin authentication as clients expect", () => {
	it("answers 401 with WWW-Authenticate: Bearer", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		for (const auth of [null, "Bearer wrong", `Basic ${TOKEN}`]) {
			const res = await get(h, auth);
			expect(res.status).toBe(401);
			expect(res.headers.get("www-authenticate")).toBe("Bearer");
		}
	});

	it.each(["Bearer", "bearer", "BEARER", "bEaReR"])("accepts the scheme written %s", async (scheme) => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		expect((await get(h, `${scheme} ${TOKEN}`)).status).toBe(200);
	});

	it("counts failures: visible in /admin/metrics and in the rejection log as admin_auth_failed", async () => {
		const h = harness({ ADMIN_TOKEN: TOKEN });
		for (const auth of [null, "Bearer wrong", `Bearer ${TOKEN}x`]) expect((await get(h, auth)).status).toBe(401);
		const metrics = await (await get(h, `Bearer ${TOKEN}`)).json<{
			rejections: { byReason: Record<string, number> };
		}>();
		expect(metrics.rejections.byReason).toEqual({ admin_auth_failed: 3 });
		expect(await rows("SELECT provider, reason, status, ip FROM rejections")).toEqual(
			Array(3).fill({ provider: "(admin)", reason: "admin_auth_failed", status: 401, ip: "198.51.100.7" }),
		);
	});

	it("limits failures per client address: past the limit 503 with Retry-After, never 429, and the token is not even compared", async () => {
		const l = limiter(2);
		const h = harness({ ADMIN_TOKEN: TOKEN, WEBHOOK_RATE_LIMITER: l.binding });
		const answers: number[] = [];
		const ip = "198.51.100.66";
		for (let i = 0; i < 4; i++) answers.push((await get(h, "Bearer wrong", ip)).status);
		expect(answers).toEqual([401, 401, 503, 503]);
		const limited = await get(h, `Bearer ${TOKEN}`, ip);
		expect(limited.status).toBe(503);
		expect(limited.headers.get("retry-after")).not.toBeNull();
		// Another client is not affected, and a right token costs no budget.
		expect((await get(h, `Bearer ${TOKEN}`, "203.0.113.9")).status).toBe(200);
		expect(Object.fromEntries(l.used)).toEqual({ "admin:198.51.100.66": 3 });
	});
});
