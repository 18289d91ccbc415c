import { beforeEach, describe, expect, it } from "vitest";
import { orderEvent, signedRequest } from "./support/bloobank";
import { call, harness, resetDb, rows } from "./support/worker";

describe("smoke", () => {
	beforeEach(resetDb);
	it("accepts a signed delivery", async () => {
		const h = harness();
		const res = await call(h, await signedRequest(orderEvent("m1", { id: "o1", ordVersion: 1, status: "PENDING" })));
		expect(res.status).toBe(200);
		expect(h.events.sent).toHaveLength(1);
		expect(await rows("SELECT status FROM deliveries")).toEqual([{ status: "enqueued" }]);
	});
});
