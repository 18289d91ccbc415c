/**
 * Keyset pagination on a monotonic integer key (row ids, ring sequence numbers): stable under
 * inserts, because new rows get larger keys and lists run newest first. The cursor is opaque.
 */

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
