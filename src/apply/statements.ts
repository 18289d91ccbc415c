import type { ResourceSource } from "../db/resources";
import type { ProviderName } from "../providers/model";
import type { ResourceSnapshot } from "../providers/types";

/**
 * The single writer of resource state (docs/design.md invariant 7). Every statement takes its rows as
 * one JSON array bound to one parameter (`json_each`), so a batch of any size stays within D1's
 * 100-bound-parameter limit, and the whole set is one `batch()`: one transaction, one round trip.
 */

/** One snapshot to apply; `ref` is the delivery row behind it (null for reconcile snapshots). */
export interface ApplyRow extends ResourceSnapshot {
	ref: number | null;
	provider: ProviderName;
	source: ResourceSource;
	/** The provider's rank of `status`: decides a tie of equal versions. */
	rank: number;
}

export interface EffectRow {
	provider: string;
	type: string;
	wallet: string | null;
	id: string;
	version: number;
	status: string;
	kind: string;
	payload: unknown;
}

/**
 * The same value with object keys in sorted order, so that equal content is equal text in D1
 * whatever key order the sender or the list API used (a tie compares stored content).
 */
export function sortedKeys(value: unknown): unknown {
	if (Array.isArray(value)) return value.map(sortedKeys);
	if (typeof value !== "object" || value === null) return value;
	const out: Record<string, unknown> = {};
	for (const key of Object.keys(value).sort()) out[key] = sortedKeys((value as Record<string, unknown>)[key]);
	return out;
}

/**
 * A second pointer to a delivery already decided (a sweep re-send of a slow `enqueued` row, a
 * queue redelivery) must not re-decide it: `processed` stays `processed` even after a newer
 * version moved state on. `failed` and `ignored` stay open: a re-send reopens them, and a late
 * dead letter must not win over the pointer that heals the row. An admin replay sets `enqueued`.
 */
const SETTLED = "('processed', 'stale')";

/**
 * A delivery is `processed` only when the state now holds what it carried (version, status and
 * content); otherwise `stale`, with note `same_version` when it lost a tie (docs/design.md, statuses).
 */
export const MARK_APPLIED = `
UPDATE deliveries SET
  status = CASE WHEN r.version = j.version AND r.status = j.status AND r.data = j.data THEN 'processed' ELSE 'stale' END,
  note = CASE WHEN r.version = j.version AND NOT (r.status = j.status AND r.data = j.data) THEN 'same_version'
    ELSE deliveries.note END,
  status_at = ?2, processed_at = ?2, attempts = attempts + 1, last_error = NULL, send_token = NULL
FROM (SELECT value->>'ref' AS ref, value->>'provider' AS provider, value->>'type' AS type,
             coalesce(value->>'wallet', '') AS wallet, value->>'id' AS rid, value->>'version' AS version,
             value->>'status' AS status, value->'data' AS data
      FROM json_each(?1)) AS j
JOIN resources AS r ON r.provider = j.provider AND r.type = j.type AND r.wallet = j.wallet AND r.id = j.rid
WHERE deliveries.id = j.ref AND deliveries.status NOT IN ${SETTLED}`;

export const MARK_IGNORED = `
UPDATE deliveries SET status = 'ignored', status_at = ?2, processed_at = ?2, attempts = attempts + 1,
  last_error = NULL, send_token = NULL
WHERE id IN (SELECT value FROM json_each(?1)) AND status NOT IN ${SETTLED}`;

export const MARK_FAILED = `
UPDATE deliveries SET status = 'failed', status_at = ?2, attempts = attempts + 1,
  last_error = j.error, send_token = NULL
FROM (SELECT value->>'ref' AS ref, value->>'error' AS error FROM json_each(?1)) AS j
WHERE deliveries.id = j.ref AND deliveries.status NOT IN ${SETTLED}`;

/** D1 caps a string at 2 MB; 600k UTF-16 units is at most 1.8 MB of UTF-8 whatever the text. */
export const MAX_CHUNK_BYTES = 600_000;

/** Splits rows into JSON arrays of at most MAX_CHUNK_BYTES (a single larger row stands alone). */
export function jsonChunks(rows: readonly unknown[], maxBytes = MAX_CHUNK_BYTES): string[] {
	const chunks: string[] = [];
	let current: string[] = [];
	let size = 2;
	for (const row of rows) {
		const json = JSON.stringify(row);
		if (current.length > 0 && size + json.length + 1 > maxBytes) {
			chunks.push(`[${current.join(",")}]`);
			current = [];
			size = 2;
		}
		current.push(json);
		size += json.length + 1;
	}
	if (current.length > 0) chunks.push(`[${current.join(",")}]`);
	return chunks;
}
