/**
 * Row types from the drizzle schema (src/db/schema.ts), so nothing hand-written can drift from it.
 * The statements in src/db/ are hand-written SQL (set-based, one JSON parameter each: see
 * docs/design.md invariant 8) and return rows keyed by the SQL column names, so the row type is the
 * table's `$inferSelect` re-keyed by each column's own SQL name (`messageId` -> `message_id`).
 */
import type { Table } from "drizzle-orm";

/** `typeof table.$inferSelect`, keyed by the SQL column names, as a D1 result row comes back. */
export type SqlRow<T extends Table> = {
	[K in keyof T["_"]["columns"] & keyof T["$inferSelect"] as T["_"]["columns"][K]["_"]["name"]]: T["$inferSelect"][K];
};

/** A row whose `status` column holds one of the table's known statuses. */
export type WithStatus<R extends { status: unknown }, S> = Omit<R, "status"> & { status: S };
