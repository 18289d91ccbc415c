import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { CountingD1, FaultyR2, RecordingQueue } from "../../fixtures/bindings";
import { layoutMismatch } from "../../src/db/shards";
import { type Env, getShards } from "../../src/env";
import worker from "../../src/index";
import type { QueueMessage, ReconcileJob } from "../../src/queue/messages";
import { type ArchiveReport, archiveSettledBodies } from "../../src/sweep/archive";

export interface Harness {
	env: Env;
	db: CountingD1;
	events: RecordingQueue<QueueMessage>;
	reconcile: RecordingQueue<ReconcileJob>;
	archive: FaultyR2;
}

/** A fresh env per test: the real bindings behind counting/fault-injecting wrappers. */
export function harness(vars: Partial<Env> = {}): Harness {
	const db = new CountingD1(env.DB);
	const events = new RecordingQueue<QueueMessage>(env.EVENTS);
	const reconcile = new RecordingQueue<ReconcileJob>(env.RECONCILE);
	if (!env.ARCHIVE) throw new Error("wrangler.toml declares no ARCHIVE bucket");
	const archive = new FaultyR2(env.ARCHIVE);
	// ARCHIVE: undefined in `vars` runs the test without the binding.
	const ARCHIVE = "ARCHIVE" in vars ? vars.ARCHIVE : archive.asR2();
	// With TEST_SHARDS=3 the other shards go through the same counters (CountingD1.sibling).
	const shards = Object.fromEntries(
		getShards(env)
			.all.slice(1)
			.map((s, i) => [`DB_${i + 1}`, db.sibling(s.db)]),
	);
	return {
		env: {
			...env,
			...vars,
			ARCHIVE,
			DB: db.asD1(),
			...shards,
			EVENTS: events.asQueue(),
			RECONCILE: reconcile.asQueue(),
		},
		db,
		events,
		reconcile,
		archive,
	};
}

/** Calls the Worker's fetch and waits for its waitUntil work. */
export async function call(h: Harness, request: Request): Promise<Response> {
	const ctx = createExecutionContext();
	const res = await worker.fetch(request, h.env, ctx);
	await waitOnExecutionContext(ctx);
	return res;
}

/** Empties every table the migrations created, in every shard (read from the database, so a new table is never missed). */
export async function resetDb(): Promise<void> {
	for (const { db } of getShards(env).all) {
		const { results } = await db
			.prepare(
				`SELECT name FROM sqlite_master WHERE type = 'table'
       AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'`,
			)
			.all<{ name: string }>();
		await db.batch(results.map((t) => db.prepare(`DELETE FROM "${t.name}"`)));
	}
	// A deployment's shards have their layout recorded from their first use (src/db/shards.ts).
	await layoutMismatch(getShards(env), Date.now());
}

/**
 * Rows of a query, run in every shard and concatenated (shard order): with TEST_SHARDS=3 a row is
 * wherever its resource was placed; aggregates and ORDER BY are merged as one database would (mergeShards).
 */
export async function rows<T = Record<string, unknown>>(sql: string, ...binds: unknown[]): Promise<T[]> {
	// An INSERT a test writes by hand goes to the home shard: one row, in one place.
	if (HOME_ONLY.test(sql) || /^\s*INSERT\b/i.test(sql))
		return (
			await env.DB.prepare(sql)
				.bind(...binds)
				.all<T>()
		).results;
	const perShard = await rowsPerShard<Record<string, unknown>>(sql, ...binds);
	if (perShard.length === 1) return (perShard[0] ?? []) as T[];
	return mergeShards(sql, perShard) as T[];
}

/**
 * What one database would have answered, from each shard's answer: aggregate columns (`count(`,
 * `sum(`, `max(`, `min(` in the select list) are combined per group of the other columns (a shard
 * without rows answers NULL for max/min, which is skipped), and an ORDER BY over selected columns
 * is applied again. An ORDER BY over a column not selected leaves the shards' concatenation.
 */
function mergeShards(sql: string, perShard: Record<string, unknown>[][]): Record<string, unknown>[] {
	const select = /^\s*SELECT\s+([\s\S]+?)\s+FROM\s/i.exec(sql)?.[1] ?? "";
	const items = splitTopLevel(select).map((item) => {
		const alias = /\s+AS\s+(\w+)\s*$/i.exec(item)?.[1] ?? item.trim().split(".").pop() ?? item;
		const fn = /^\s*(count|sum|max|min)\s*\(/i.exec(item)?.[1]?.toLowerCase() ?? null;
		return { alias, fn };
	});
	let merged = perShard.flat();
	if (items.some((i) => i.fn !== null)) {
		const groups = new Map<string, Record<string, unknown>>();
		for (const row of merged) {
			const key = JSON.stringify(items.filter((i) => i.fn === null).map((i) => row[i.alias]));
			const sum = groups.get(key);
			if (!sum) {
				groups.set(key, { ...row });
				continue;
			}
			for (const { alias, fn } of items) {
				const [a, b] = [sum[alias], row[alias]];
				if (fn === null || b === null || b === undefined) continue;
				if (a === null || a === undefined) sum[alias] = b;
				else if (fn === "count" || fn === "sum") sum[alias] = Number(a) + Number(b);
				else if (fn === "max") sum[alias] = Number(b) > Number(a) ? b : a;
				else sum[alias] = Number(b) < Number(a) ? b : a;
			}
		}
		merged = [...groups.values()];
	}
	const order = /\bORDER\s+BY\s+([\w\s,]+?)(?:\s+LIMIT\b|\s*$)/i.exec(sql)?.[1];
	const keys = (order ?? "")
		.split(",")
		.filter((k) => k.trim() !== "")
		.map((k) => {
			const [column = "", direction = ""] = k.trim().split(/\s+/);
			return { column, desc: direction.toUpperCase() === "DESC" };
		});
	if (keys.length > 0 && keys.every((k) => items.some((i) => i.alias === k.column))) {
		merged.sort((x, y) => {
			for (const { column, desc } of keys) {
				const [a, b] = [x[column], y[column]] as [string | number, string | number];
				if (a !== b) return (a < b ? -1 : 1) * (desc ? -1 : 1);
			}
			return 0;
		});
	}
	return merged;
}

/** A select list split on its top-level commas. */
function splitTopLevel(list: string): string[] {
	const parts: string[] = [];
	let depth = 0;
	let current = "";
	for (const ch of list) {
		if (ch === "(") depth++;
		if (ch === ")") depth--;
		if (ch === "," && depth === 0) {
			parts.push(current);
			current = "";
		} else current += ch;
	}
	parts.push(current);
	return parts;
}

/** Tables that only the home shard uses (src/db/shards.ts): asked there alone. */
const HOME_ONLY = /\bFROM (rejections|rejection_counts|alert_state|reconcile_\w+|heartbeats)\b/i;

/** `SELECT count(*) FROM <fromWhere>` summed over the shards. */
export async function countRows(fromWhere: string, ...binds: unknown[]): Promise<number> {
	const perShard = await rowsPerShard<{ n: number }>(`SELECT count(*) AS n FROM ${fromWhere}`, ...binds);
	return perShard.reduce((sum, r) => sum + Number(r[0]?.n ?? 0), 0);
}

/** A query's rows in each shard, in shard order. */
export async function rowsPerShard<T = Record<string, unknown>>(sql: string, ...binds: unknown[]): Promise<T[][]> {
	return Promise.all(
		getShards(env).all.map(
			async ({ db }) =>
				(
					await db
						.prepare(sql)
						.bind(...binds)
						.all<T>()
				).results,
		),
	);
}

/** The sweep's archive step over every shard, its reports summed (src/sweep/sweep.ts does the same). */
export async function archiveAll(h: Harness, nowMs: number): Promise<ArchiveReport> {
	const archive = h.env.ARCHIVE;
	if (!archive) throw new Error("no ARCHIVE binding");
	const reports = await Promise.all(getShards(h.env).all.map((s) => archiveSettledBodies(s.db, archive, nowMs)));
	return {
		archived: reports.reduce((n, r) => n + r.archived, 0),
		failed: reports.reduce((n, r) => n + r.failed, 0),
	};
}
