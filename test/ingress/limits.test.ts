import { beforeEach, describe, expect, it } from "vitest";
import { clientKey } from "../../src/ingress/limit";
import { orderEvent, signedRequest } from "../support/bloobank";
import { limiter } from "../support/limiter";
import { call, harness, resetDb, rows } from "../support/worker";

beforeEach(resetDb);

const from = (ip: string) => ({ headers: { "cf-connecting-ip": ip } });
const order = (n: number) => orderEvent(`rl-${n}`, { id: `o-${n}`, ordVersion: 1, status: "PENDING" });

describe("rate limiting per client, never per sender (docs/design.md: 503, never 429)", () => {
	it("junk from one client uses up only that client's budget: a genuine delivery from another address gets 200", async () => {
		const l = limiter(3);
		const h = harness({ WEBHOOK_RATE_LIMITER: l.binding });
		const answers: number[] = [];
		for (let i = 0; i < 5; i++)
			answers.push((await call(h, await signedRequest(order(i), { secret: "junk", ...from("198.51.100.7") }))).status);
		expect(answers).toEqual([401, 401, 401, 503, 503]);
		const genuine = await call(h, await signedRequest(order(9), from("203.0.113.9")));
		expect(genuine.status).toBe(200);
		expect(await rows("SELECT message_id FROM deliveries")).toEqual([{ message_id: "rl-9" }]);
	});

	it("over the limit answers 503 with Retry-After, never 429, and stores nothing", async () => {
		const l = limiter(1);
		const h = harness({ WEBHOOK_RATE_LIMITER: l.binding });
		expect((await call(h, await signedRequest(order(1), from("203.0.113.9")))).status).toBe(200);
		const limited = await call(h, await signedRequest(order(2), from("203.0.113.9")));
		expect(limited.status).toBe(503);
		expect(limited.headers.get("retry-after")).toBe("10");
		expect(await rows("SELECT message_id FROM deliveries")).toEqual([{ message_id: "rl-1" }]);
	});

	it("allow-listed sources bypass the limiter", async () => {
		const l = limiter(0);
		const h = harness({ WEBHOOK_RATE_LIMITER: l.binding, ALLOWED_SOURCE_CIDRS: "203.0.113.0/24" });
		expect((await call(h, await signedRequest(order(1), from("203.0.113.9")))).status).toBe(200);
		expect((await call(h, await signedRequest(order(2), from("203.0.113.10")))).status).toBe(200);
		expect(l.used.size).toBe(0);
	});

	it("a failing limiter never refuses a genuine delivery", async () => {
		const broken: RateLimit = {
			limit: async () => {
				throw new Error("rate limiter unavailable");
			},
		};
		const h = harness({ WEBHOOK_RATE_LIMITER: broken });
		expect((await call(h, await signedRequest(order(1), from("203.0.113.9")))).status).toBe(200);
	});

	it.each([
		["203.0.113.7", "webhook:203.0.113.7"],
		[" 203.0.113.7 ", "webhook:203.0.113.7"],
		["::ffff:203.0.113.7", "webhook:203.0.113.7"],
		["2001:db8:1:2:aaaa::1", "webhook:2001:db8:1:2::/64"],
		["2001:0db8:0001:0002:bbbb:cccc:dddd:eeee", "webhook:2001:db8:1:2::/64"],
		["2001:db8:1:3::1", "webhook:2001:db8:1:3::/64"],
		["not an ip", "webhook:(no address)"],
		[null, "webhook:(no address)"],
	])("client %j is keyed %s (an IPv6 client holds a whole /64)", (ip, key) => {
		expect(clientKey("webhook", ip)).toBe(key);
	});
});
