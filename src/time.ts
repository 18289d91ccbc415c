/** Times and delays, one definition each. Times are epoch milliseconds everywhere in the code. */

/** RFC 3339 UTC, as the admin API and the provider's filter expressions write times. */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
	return ms === null ? null : new Date(ms).toISOString();
}

/**
 * Exponential backoff: `base` after the first failure, doubling with each one after, never more
 * than `cap` (same unit as `base`). `failures` counts from 1; 0 is treated as 1.
 */
export function backoff(failures: number, base: number, cap: number): number {
	return Math.min(cap, base * 2 ** Math.max(0, failures - 1));
}
