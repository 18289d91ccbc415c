/**
 * Rows written per delivery, from D1's own result metadata (meta.rows_written: every table row and
 * every index entry a statement writes; what D1 bills and Workers Free caps at 100,000 a day),
 * summed over every statement the delivery causes: ingress (the inbox write and the `enqueued`
 * mark), apply (the consumer's batch) and, apart, the execution of its effect. Deterministic
 * counts on the real local D1; the README's "Capacity and cost" quotes them.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { getShards } from "../../src/env";
import { ARCHIVE_GRACE_MS } from "../../src/sweep/archive";
import { consume } from "../support/apply";
import { type OrderFields, orderEvent, orderShard, signedRequest } from "../support/bloobank";
import { archiveAll, call, type Harness, harness, resetDb, rows } from "../support/worker";

beforeEach(resetDb);

/** What one delivery wrote, step by step. */
interface Written {
	ingress: number;
	apply: number;
	effects: number;
}

/** The executor's batch is the one that marks an effect done (src/effects/executor.ts). */
const isEffectExecution = (sql: string[]) => sql.some((s) => s.includes("status = 'done'"));

async function deliver(h: Harness, messageId: string, o: OrderFields): Promise<Written> {
	const sentBefore = h.events.sent.length;
	const atIngress = h.db.writes.length;
	const res = await call(h, await signedRequest(orderEvent(messageId, o)));
	expect(res.status).toBe(200);
	const ingress = h.db.writes.slice(atIngress).reduce((n, w) => n + w.rows, 0);
	const pointers = h.events.sent.slice(sentBefore);
	const atApply = h.db.writes.length;
	if (pointers.length > 0) await consume(h, pointers);
	const after = h.db.writes.slice(atApply);
	const sum = (list: typeof after) => list.reduce((n, w) => n + w.rows, 0);
	return {
		ingress,
		apply: sum(after.filter((w) => !isEffectExecution(w.sql))),
		effects: sum(after.filter((w) => isEffectExecution(w.sql))),
	};
}

async function status(messageId: string): Promise<string | undefined> {
	return (await rows<{ status: string }>("SELECT status FROM deliveries WHERE message_id = ?1", messageId))[0]?.status;
}

describe("rows written per delivery (meta.rows_written)", () => {
	it("new, state-changing, with an effect, duplicate, stale, archived: each costs what the README states", async () => {
		const h = harness();
		// Warm: a table's first row writes more than the steady state (its sqlite_sequence row, the
		// first currency's settled total), so one settled order goes through first.
		// In the measured order's shard (src/db/shards.ts): the first settled total is per database.
		const shards = getShards(h.env);
		const shardOf = (id: string) => orderShard(id, shards);
		const warm = Array.from({ length: 64 }, (_, i) => `o-warm-${i}`).find((id) => shardOf(id) === shardOf("o-rw"));
		await deliver(h, "warm-1", { id: warm ?? "o-warm", ordVersion: 1, status: "SUCCESS" });

		const newResource = await deliver(h, "rw-1", { id: "o-rw", ordVersion: 1, status: "PENDING" });
		const stateChange = await deliver(h, "rw-2", { id: "o-rw", ordVersion: 2, status: "PENDING", amount: 1200 });
		const withEffect = await deliver(h, "rw-3", { id: "o-rw", ordVersion: 3, status: "SUCCESS", amount: 1200 });
		const duplicate = await deliver(h, "rw-3", { id: "o-rw", ordVersion: 3, status: "SUCCESS", amount: 1200 });
		const stale = await deliver(h, "rw-4", { id: "o-rw", ordVersion: 2, status: "PENDING", amount: 1200 });
		const before = h.db.rowsWritten;
		while ((await archiveAll(h, Date.now() + ARCHIVE_GRACE_MS + 1)).archived > 0);
		const archiveFive = h.db.rowsWritten - before;

		// The outcomes the counts belong to.
		expect([await status("rw-1"), await status("rw-2"), await status("rw-3"), await status("rw-4")]).toEqual([
			"processed",
			"processed",
			"processed",
			"stale",
		]);
		const figures = { newResource, stateChange, withEffect, duplicate, stale, archiveFive };
		console.log(`rows written: ${JSON.stringify(figures)}`);
		// Where they go (README, "Capacity and cost"): the inbox insert writes the row, the dedupe key,
		// deliveries_received_at, deliveries_resource and deliveries_open (5); the `enqueued` mark the
		// row alone (1); applying writes the resource row (and its key when new), the delivery row and
		// its deliveries_to_archive entry; an effect adds its row, key and effects_open entry, and
		// its claim (the row again); executing it, the settled total and its "done".
		expect(figures).toEqual({
			newResource: { ingress: 6, apply: 4, effects: 0 },
			stateChange: { ingress: 6, apply: 3, effects: 0 },
			withEffect: { ingress: 6, apply: 7, effects: 2 },
			duplicate: { ingress: 1, apply: 0, effects: 0 },
			stale: { ingress: 6, apply: 2, effects: 0 },
			archiveFive: 35,
		});
	});
});
