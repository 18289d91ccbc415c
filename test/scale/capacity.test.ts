/**
 * The figures behind the README's capacity model, measured on the local D1 (the same SQLite
 * engine D1 runs): bytes of D1 per delivery (before and after its body moves to R2), per resource
 * and per effect, from D1's own size figure (meta.size_after, page-granular, hence N deliveries
 * at a time). Rows written per delivery: test/scale/rows-written.test.ts.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { ARCHIVE_GRACE_MS } from "../../src/sweep/archive";
import { consume } from "../support/apply";
import { type OrderFields, orderEvent, signedRequest } from "../support/bloobank";
import { archiveAll, call, type Harness, harness, resetDb } from "../support/worker";

beforeEach(resetDb);

const N = 150;
/** Bodies of about 720 bytes, as measured on main for issue 14. */
const PAD = "x".repeat(420);

async function size(): Promise<number> {
	return (await env.DB.prepare("SELECT 1").run()).meta.size_after;
}

function body(messageId: string, o: OrderFields): string {
	const e = orderEvent(messageId, o);
	return JSON.stringify({ ...e, data: { ...e.data, description: PAD } });
}

/** Ingests each event through the Worker and applies the pointers in queue batches of 100. */
async function deliver(h: Harness, events: [string, OrderFields][]): Promise<void> {
	let pointers = [];
	for (const [messageId, o] of events) {
		const before = h.events.sent.length;
		const res = await call(h, await signedRequest(body(messageId, o)));
		expect(res.status).toBe(200);
		pointers.push(...h.events.sent.slice(before));
		if (pointers.length === 100) {
			await consume(h, pointers);
			pointers = [];
		}
	}
	if (pointers.length > 0) await consume(h, pointers);
}

async function archiveEverything(h: Harness): Promise<void> {
	while ((await archiveAll(h, Date.now() + ARCHIVE_GRACE_MS + 1)).archived > 0);
}

const perDelivery = (bytes: number) => Math.round(bytes / N);

describe("capacity figures", { timeout: 120_000 }, () => {
	it("bytes of D1 per settled delivery: under 700 once its body is in R2", async () => {
		const h = harness();
		const bodyBytes = body("m-000000", { id: "o-000000", ordVersion: 1, status: "PENDING" }).length;
		// One resource, many deliveries: the growth is the deliveries' own.
		const round = async (r: number) =>
			deliver(
				h,
				Array.from({ length: N }, (_, i): [string, OrderFields] => [
					`d${r}-${String(i).padStart(6, "0")}`,
					{ id: "o-one", ordVersion: r * N + i + 1, status: "PENDING" },
				]),
			);
		// D1 gives back the pages a delete frees, so each figure is a difference of two sizes taken
		// after everything settled was archived: the steady state of a running database.
		await round(0);
		await archiveEverything(h);
		const a0 = await size();
		await round(1);
		const b1 = await size();
		await archiveEverything(h);
		const a1 = await size();
		await round(2);
		await archiveEverything(h);
		const a2 = await size();
		const kept = perDelivery(b1 - a0);
		const archived = perDelivery(a2 - a1);
		console.log(
			`capacity: body ${bodyBytes} B; D1 per delivery with its body ${kept} B, once archived ${archived} B (the round before: ${perDelivery(a1 - a0)} B)`,
		);
		expect(archived).toBeLessThan(700);
		expect(archived).toBeLessThan(kept);
	});

	it("bytes of D1 per resource and per effect", async () => {
		const h = harness();
		const orders = (tag: string, status: string): [string, OrderFields][] =>
			Array.from({ length: N }, (_, i) => [
				`${tag}-${String(i).padStart(6, "0")}`,
				{ id: `o-${tag}-${String(i).padStart(6, "0")}`, ordVersion: 1, status },
			]);
		// Warm-up so that later rounds reuse freed pages as a running database does.
		await deliver(h, orders("warm", "PENDING"));
		await archiveEverything(h);
		const s0 = await size();
		await deliver(h, orders("pend", "PENDING")); // new resource per delivery, no effect
		await archiveEverything(h);
		const s1 = await size();
		await deliver(h, orders("paid", "SUCCESS")); // new resource and one effect per delivery
		await archiveEverything(h);
		const s2 = await size();
		const resourcePlusDelivery = perDelivery(s1 - s0);
		const effect = perDelivery(s2 - s1) - resourcePlusDelivery;
		console.log(
			`capacity: per new order (its archived delivery and its resource) ${resourcePlusDelivery} B; per effect ${effect} B`,
		);
		expect(resourcePlusDelivery).toBeGreaterThan(0);
	});
});
