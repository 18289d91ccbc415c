/**
 * Is the database the code expects there? One D1 batch selects every column of every table of
 * src/db/schema.ts with LIMIT 0: SQLite resolves each name, so a migration not applied is "no such
 * table" or "no such column" and no row is read. The list comes from the schema, so a new column
 * is checked as soon as the code uses it.
 */
import { is } from "drizzle-orm";
import { getTableConfig, SQLiteTable } from "drizzle-orm/sqlite-core";
import * as schema from "./schema";

/** What to do about it, in the log line and the 503 answer. */
export const MIGRATIONS_HINT =
	"the D1 migrations are not applied: `npm run dev` applies them locally (plain `wrangler dev` does not); deployed: `npx wrangler d1 migrations apply DB --remote`";

/** D1's messages for SQL naming a table or column the database does not have. */
export function isMissingSchema(err: unknown): boolean {
	const message = err instanceof Error ? err.message : String(err);
	return /no such (table|column)|has no column named/i.test(message);
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

const PROBES: readonly string[] = (Object.values(schema) as unknown[])
	.filter((value): value is SQLiteTable => is(value, SQLiteTable))
	.map((table) => {
		const config = getTableConfig(table);
		return `SELECT ${config.columns.map((c) => quote(c.name)).join(", ")} FROM ${quote(config.name)} LIMIT 0`;
	});

/** Databases whose schema held once: migrations are not undone, so the check is not repeated. */
const verified = new WeakSet<D1Database>();

/** null when the schema is in place; "migrations" when it is not; "d1" when D1 did not answer. */
export async function schemaProblem(db: D1Database): Promise<"migrations" | "d1" | null> {
	if (verified.has(db)) return null;
	try {
		await db.batch(PROBES.map((sql) => db.prepare(sql)));
	} catch (err) {
		return isMissingSchema(err) ? "migrations" : "d1";
	}
	verified.add(db);
	return null;
}
