import type { ResourceSource } from "../db/resources";
import type { ProviderName } from "../providers/model";
import type { ResourceSnapshot } from "../providers/types";

/**
 * The rows the single writer of resource state (docs/design.md invariant 7) applies, and how they
 * are cut into JSON parameters. Every statement of the apply batch (src/db/resources.ts,
 * deliveries.ts, effects.ts) takes its rows as one JSON array bound to one parameter
 * (`json_each`), so a batch of any size stays within D1's 100-bound-parameter limit, and the whole
 * set is one `batch()`: one transaction, one round trip.
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
