/**
 * The database's size, from D1's own figure: every D1 result carries `meta.size_after`, the
 * database's size in bytes once the statement has run (docs/design.md, storage at scale).
 */

/**
 * D1's limit per database on Workers Paid: 10 GB. On Workers Free it is 500 MB: there, read
 * `database.bytes` of GET /admin/metrics against 500,000,000 (the `database_size` alert, at 80%
 * of this constant, would fire only at 8 GB, past Free's limit).
 */
export const D1_LIMIT_BYTES = 10_000_000_000;

/** The share of D1_LIMIT_BYTES at which the `database_size` alert fires. */
export const DATABASE_ALERT_RATIO = 0.8;

/** The database size a D1 result reports, or null when it reports none. */
export function sizeAfter(result: D1Result<unknown> | undefined): number | null {
	const size = result?.meta.size_after;
	return typeof size === "number" && Number.isFinite(size) && size > 0 ? size : null;
}
