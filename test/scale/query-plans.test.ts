/**
 * The reads and bounded writes of the sweep, retention, the archive, the admin API and the console
 * each reach `deliveries` and `effects` through an index (or the rowid), never by scanning the
 * table: a cut to an index (test/scale/rows-written.test.ts) must not turn one of them into a
 * full scan. Each src/db function runs against a D1 wrapper that answers every statement with
 * its EXPLAIN QUERY PLAN, so the SQL checked is exactly the SQL shipped.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
	ackHistogramPerHour,
	ackP99Since,
	archiveCandidates,
	countFailedDeliveries,
	deliveriesByMessageId,
	deliveriesOfResource,
	deliveriesPerMinute,
	deliveryPage,
	deliveryRow,
	lagHistogramPerHour,
	olderSecretUses,
	oldestUnprocessed,
	pruneBodies,
	pruneDeliveries,
	replayPage,
	takeStuckDeliveries,
} from "../../src/db/deliveries";
import { claimLapsedEffects, countFailedEffects, effectPage } from "../../src/db/effects";

interface PlanRow {
	detail: string;
}

/** A D1 whose statements return their query plan instead of running. */
function planning(plans: string[]): D1Database {
	const statement = (sql: string, binds: unknown[]): D1PreparedStatement => {
		const explain = async () => {
			const r = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
				.bind(...binds)
				.all<PlanRow>();
			plans.push(r.results.map((p) => p.detail).join("\n"));
			return { ...r, results: [] };
		};
		return {
			bind: (...values: unknown[]) => statement(sql, values),
			all: explain,
			run: explain,
			first: async () => {
				await explain();
				return null;
			},
		} as unknown as D1PreparedStatement;
	};
	return { prepare: (sql: string) => statement(sql, []) } as unknown as D1Database;
}

async function planOf(run: (db: D1Database) => Promise<unknown> | D1PreparedStatement): Promise<string> {
	const plans: string[] = [];
	const db = planning(plans);
	const out = await run(db);
	if (out && typeof (out as D1PreparedStatement).all === "function") await (out as D1PreparedStatement).all();
	return plans.join("\n");
}

/** A line that reads a whole table: "SCAN deliveries" without "USING ... INDEX". */
const fullScan = (plan: string, table: string) =>
	plan.split("\n").filter((l) => new RegExp(`SCAN ${table}\\b(?!.*USING)`).test(l) || l === `SCAN ${table}`);

const NOW = 1_800_000_000_000;

const QUERIES: Record<string, (db: D1Database) => Promise<unknown> | D1PreparedStatement> = {
	"sweep: stuck deliveries": (db) => takeStuckDeliveries(db, "t", NOW, NOW, NOW, 100),
	"metrics and alerts: oldest unprocessed": (db) => oldestUnprocessed(db),
	"alerts: failed deliveries": (db) => countFailedDeliveries(db),
	"alerts: ack p99": (db) => ackP99Since(db, NOW),
	"retention: bodies": (db) => pruneBodies(db, NOW, 100, false),
	"retention: bodies with the archive": (db) => pruneBodies(db, NOW, 100, true),
	"retention: dedupe keys": (db) => pruneDeliveries(db, NOW, 100),
	"archive: candidates": (db) => archiveCandidates(db, NOW, 50, 1_000_000),
	"admin: deliveries list": (db) => deliveryPage(db, { provider: "bloobank", status: "failed", event: null }, 1e15, 50),
	"admin: one delivery": (db) => deliveryRow(db, "bloobank", "m-1"),
	"admin: replay": (db) =>
		replayPage(db, NOW, 0, { provider: null, messageId: null, status: "failed", since: null }, 50),
	"console: by message id": (db) => deliveriesByMessageId(db, '["bloobank","bold"]', "m-1"),
	"console: a resource's deliveries": (db) => deliveriesOfResource(db, "bloobank", "payment_order", "w1", "o-1", 50),
	"console: per minute": (db) => deliveriesPerMinute(db, NOW),
	"console: ack histogram": (db) => ackHistogramPerHour(db, NOW),
	"console: lag histogram": (db) => lagHistogramPerHour(db, NOW),
	"console: rotation": (db) => olderSecretUses(db, NOW),
	"sweep: lapsed effects": (db) => claimLapsedEffects(db, NOW, NOW, 50),
	"alerts: failed effects": (db) => countFailedEffects(db),
	"admin: effects list": (db) => effectPage(db, "failed", 1e15, 50),
};

describe("query plans of the operational queries", () => {
	for (const [name, run] of Object.entries(QUERIES)) {
		it(`${name}: reads deliveries and effects through an index, never a full scan`, async () => {
			const plan = await planOf(run);
			expect(plan).not.toBe("");
			expect({ name, scans: [...fullScan(plan, "deliveries"), ...fullScan(plan, "effects")], plan }).toMatchObject({
				scans: [],
			});
		});
	}
});
