/**
 * Every statement on `resources`, the local mirror of provider state. Only the consumer's apply
 * batch writes it (docs/design.md invariant 7); the admin API and reconciliation read it.
 */
import type { ProviderName } from "../providers/model";
import type { SqlRow } from "./rows";
import type { resources } from "./schema";

/** Where a stored snapshot came from. */
export const RESOURCE_SOURCES = ["webhook", "reconcile"] as const;
export type ResourceSource = (typeof RESOURCE_SOURCES)[number];
/** `status` is the provider's own status (each sender has its own vocabulary), so it stays a string. */
export type ResourceRow = Omit<SqlRow<typeof resources>, "source"> & { source: ResourceSource };

/**
 * Invariant 5, in SQL: the stored row changes only when the incoming version is greater, or
 * equal with a higher status rank (a final status beats a non-final one: docs/design.md,
 * statuses). A resource is keyed by (provider, type, wallet, id); wallet "" where the sender has
 * no scope. Rows for the same resource are applied in array order, each against the result of
 * the last, so a batch ends at its highest version whatever the order of its messages.
 * `rowsJson`: one JSON array of ApplyRow (src/apply/statements.ts).
 */
export function upsertResources(db: D1Database, rowsJson: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(`
INSERT INTO resources (provider, type, wallet, id, version, status, status_rank, data, updated_at, source)
SELECT value->>'provider', value->>'type', coalesce(value->>'wallet', ''), value->>'id', value->>'version',
       value->>'status', value->>'rank', value->'data', ?2, value->>'source'
FROM json_each(?1) WHERE true
ON CONFLICT (provider, type, wallet, id) DO UPDATE SET
  version = excluded.version, status = excluded.status, status_rank = excluded.status_rank, data = excluded.data,
  updated_at = excluded.updated_at, source = excluded.source
WHERE excluded.version > resources.version
   OR (excluded.version = resources.version AND excluded.status_rank > resources.status_rank)`)
		.bind(rowsJson, nowMs);
}

export type ResourceItemRow = Omit<ResourceRow, "status_rank">;

/** With `wallet`, that wallet's resource; without, every wallet's of that id (at most 21, by wallet). */
export async function findResources(
	db: D1Database,
	provider: string,
	type: string,
	id: string,
	wallet: string | null,
): Promise<ResourceItemRow[]> {
	const { results } = await db
		.prepare(
			`SELECT provider, type, wallet, id, status, version, data, updated_at, source FROM resources
       WHERE provider = ?1 AND type = ?2 AND id = ?3 AND (?4 IS NULL OR wallet = ?4) ORDER BY wallet LIMIT 21`,
		)
		.bind(provider, type, id, wallet)
		.all<ResourceItemRow>();
	return results;
}

/** The stored versions of the listed resources of one wallet, in one query whatever their number. */
export async function resourceVersions(
	db: D1Database,
	provider: ProviderName,
	type: string,
	wallet: string,
	idsJson: string,
): Promise<Pick<ResourceRow, "id" | "version">[]> {
	const { results } = await db
		.prepare(
			`SELECT id, version FROM resources
       WHERE provider = ?3 AND type = ?4 AND wallet = ?2
         AND id IN (SELECT value FROM json_each(?1))`,
		)
		.bind(idsJson, wallet, provider, type)
		.all<Pick<ResourceRow, "id" | "version">>();
	return results;
}
