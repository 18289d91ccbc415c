/**
 * Keyset pagination on a monotonic integer key (row ids, ring sequence numbers): stable under
 * inserts, because new rows get larger keys and lists run newest first. The cursor is opaque.
 */

import { fanOut, type Shard, type Shards } from "../db/shards";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export interface Page<T> {
	items: T[];
	nextCursor: string | null;
}

export function parseLimit(value: string | undefined): number {
	const n = Number(value ?? DEFAULT_LIMIT);
	return Number.isSafeInteger(n) && n > 0 ? Math.min(n, MAX_LIMIT) : DEFAULT_LIMIT;
}

/** The key to list below; Number.MAX_SAFE_INTEGER for the first page, null for a bad cursor. */
export function parseCursor(value: string | undefined): number | null {
	if (value === undefined || value === "") return Number.MAX_SAFE_INTEGER;
	const n = /^c\d{1,16}$/.test(value) ? Number(value.slice(1)) : Number.NaN;
	return Number.isSafeInteger(n) ? n : null;
}

/** Rows fetched with LIMIT limit + 1: the extra row only says there is a next page. */
export function page<R, T>(rows: R[], limit: number, key: (r: R) => number, toItem: (r: R) => T): Page<T> {
	const items = rows.slice(0, limit);
	const last = items.at(-1);
	return {
		items: items.map(toItem),
		nextCursor: rows.length > limit && last !== undefined ? `c${key(last)}` : null,
	};
}

/**
 * A list over every shard (src/db/shards.ts). The cursor holds one bound per shard ("c12.5.9";
 * with one shard exactly the single-key cursor above), so each shard is paged on its own index.
 * Each shard's rows come newest id first; the page merges them by `key` (a time), always taking
 * the head of one shard's rows, so what a page takes from a shard is a prefix of them and the
 * next page's bound for that shard skips nothing.
 */
export function parseShardCursor(value: string | undefined, shards: number): number[] | null {
	if (value === undefined || value === "") return Array.from({ length: shards }, () => Number.MAX_SAFE_INTEGER);
	if (!/^c\d{1,16}(\.\d{1,16})*$/.test(value)) return null;
	const bounds = value.slice(1).split(".").map(Number);
	return bounds.length === shards && bounds.every(Number.isSafeInteger) ? bounds : null;
}

export async function shardedPage<R, T>(
	shards: Shards,
	bounds: readonly number[],
	limit: number,
	fetch: (db: D1Database, below: number, take: number) => Promise<R[]>,
	row: { id: (r: R) => number; key: (r: R) => number },
	toItem: (r: R, shard: Shard) => T,
): Promise<Page<T>> {
	const lists = await fanOut(shards, (s) => fetch(s.db, bounds[s.index] ?? Number.MAX_SAFE_INTEGER, limit + 1));
	const heads = lists.map(() => 0);
	const next = [...bounds];
	const items: T[] = [];
	while (items.length < limit) {
		let pick = -1;
		for (const [i, list] of lists.entries()) {
			const r = list[heads[i] ?? 0];
			const best = pick === -1 ? undefined : lists[pick]?.[heads[pick] ?? 0];
			if (r !== undefined && (best === undefined || row.key(r) > row.key(best))) pick = i;
		}
		const shard = shards.all[pick];
		const r = lists[pick]?.[heads[pick] ?? 0];
		if (!shard || r === undefined) break;
		items.push(toItem(r, shard));
		next[pick] = row.id(r);
		heads[pick] = (heads[pick] ?? 0) + 1;
	}
	// A shard the page took nothing from is bounded where it stood when read (above its newest row
	// seen, or everything when it had none), so rows inserted there meanwhile, which are newer than
	// this page, do not show up on the next one.
	for (const [i, list] of lists.entries()) {
		if ((heads[i] ?? 0) > 0) continue;
		const newest = list[0];
		next[i] = newest === undefined ? 0 : row.id(newest) + 1;
	}
	const more = lists.some((list, i) => list.length > (heads[i] ?? 0));
	return { items, nextCursor: more ? `c${next.join(".")}` : null };
}
