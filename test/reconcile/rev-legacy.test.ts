/**
 * A BlooBank order stored before wallets were keyed (migration 0006 gave it wallet '') and
 * refreshed without ?wallet=: under 5a68b50 the route answered 400; asking the only listed wallet
 * instead stores a second row (w1, id) beside the legacy one, whose effects would fire again.
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { ACCESS_KEY, BASE_URL, FakeBlooBank, PRIVATE_KEY_HEX } from "../../fixtures/fake-bloobank";
import type { QueueMessage } from "../../src/queue/messages";
import { consume } from "../support/apply";
import { call, type Harness, harness, resetDb, rows } from "../support/worker";

const ADMIN = "refresh-test-admin-token-0123456789abcdef";
const API = {
	BLOOBANK_API_BASE_URL: BASE_URL,
	BLOOBANK_ACCESS_KEY: ACCESS_KEY,
	BLOOBANK_PRIVATE_KEY: PRIVATE_KEY_HEX,
	BLOOBANK_WALLETS: "w1",
	ADMIN_TOKEN: ADMIN,
};
let fake: FakeBlooBank;
beforeEach(async () => {
	await resetDb();
	fake = new FakeBlooBank();
	vi.spyOn(globalThis, "fetch").mockImplementation(fake.fetch);
});
afterEach(() => vi.restoreAllMocks());
const refresh = (h: Harness, path: string) =>
	call(
		h,
		new Request(`https://receiver.test${path}`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` } }),
	);

it("a stored BlooBank order without a wallet is refused (400), not asked of the only listed wallet", async () => {
	const h = harness(API);
	await rows(
		`INSERT INTO resources (provider, type, id, wallet, version, status, status_rank, data, updated_at, source)
     VALUES ('bloobank', 'payment_order', 'ord_w1_0', '', 1, 'PENDING', 0, '{}', 0, 'webhook')`,
	);
	fake.seed(1, () => ({ status: "SUCCESS", ordVersion: 5 }));
	const res = await refresh(h, "/admin/resources/bloobank/payment_order/ord_w1_0/refresh");
	await consume(h, h.events.sent.filter((m) => m.kind === "snapshot") as QueueMessage[]);
	expect(res.status).toBe(400);
	expect(fake.requests).toHaveLength(0);
	expect(await rows("SELECT wallet FROM resources WHERE id = 'ord_w1_0'")).toEqual([{ wallet: "" }]);
});
