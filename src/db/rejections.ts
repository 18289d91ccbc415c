/**
 * Every statement on `rejections` (the sampled log, a ring of REJECTION_LOG_CAP rows) and
 * `rejection_counts` (per minute, provider and reason): src/ingress/rejections.ts writes them in
 * one batch per flush, the sweep prunes them, metrics, alerts and the console read them.
 */
import type { SqlRow } from "./rows";
import type { rejectionCounts, rejections } from "./schema";

export type RejectionRow = SqlRow<typeof rejections>;
export type RejectionCountRow = SqlRow<typeof rejectionCounts>;

/** Adds counts given as one JSON array of `{minute, provider, reason, count}`. */
export function addRejectionCounts(db: D1Database, countsJson: string): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO rejection_counts (minute, provider, reason, count)
         SELECT value->>'minute', value->>'provider', value->>'reason', value->>'count' FROM json_each(?1) WHERE true
         ON CONFLICT (minute, provider, reason) DO UPDATE SET count = count + excluded.count`,
		)
		.bind(countsJson);
}

/** Appends samples (one JSON array) to the ring of `cap` slots, overwriting the oldest. */
export function addRejectionSamples(db: D1Database, cap: number, samplesJson: string): D1PreparedStatement {
	return db
		.prepare(
			`INSERT OR REPLACE INTO rejections (id, seq, provider, reason, status, size, ip, at)
           SELECT (s.base + j.key) % ?1, s.base + j.key, j.value->>'provider', j.value->>'reason', j.value->>'status',
             j.value->>'size', j.value->>'ip', j.value->>'at'
           FROM (SELECT coalesce(max(seq), 0) + 1 AS base FROM rejections) AS s, json_each(?2) AS j`,
		)
		.bind(cap, samplesJson);
}

/** A page of the log, newest first, below `seq` `below`. */
export async function rejectionPage(db: D1Database, below: number, take: number): Promise<Omit<RejectionRow, "id">[]> {
	const { results } = await db
		.prepare(
			"SELECT seq, provider, reason, status, size, ip, at FROM rejections WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2",
		)
		.bind(below, take)
		.all<Omit<RejectionRow, "id">>();
	return results;
}

/** The 50 latest samples (rows: `Omit<RejectionRow, "id" | "seq">`). */
export function latestRejections(db: D1Database): D1PreparedStatement {
	return db.prepare("SELECT provider, reason, status, size, ip, at FROM rejections ORDER BY seq DESC LIMIT 50");
}

/** Counts per reason since `minute` (rows: `{reason, n}`). */
export function rejectionsByReasonSince(db: D1Database, minute: number): D1PreparedStatement {
	return db
		.prepare("SELECT reason, sum(count) AS n FROM rejection_counts WHERE minute >= ?1 GROUP BY reason")
		.bind(minute);
}

/** Counts per hour and reason since `minute`, on the primary key's leading column (rows: `{hour, reason, n}`). */
export function rejectionsPerHourSince(db: D1Database, minute: number): D1PreparedStatement {
	return db
		.prepare(
			`SELECT minute / 60 AS hour, reason, sum(count) AS n FROM rejection_counts WHERE minute >= ?1
         GROUP BY hour, reason ORDER BY hour`,
		)
		.bind(minute);
}

/** Counts per minute in [from, to) of the listed reasons (rows: `{minute, n}`). */
export function rejectionsPerMinute(
	db: D1Database,
	from: number,
	to: number,
	reasonsJson: string,
): D1PreparedStatement {
	return db
		.prepare(
			`SELECT minute, sum(count) AS n FROM rejection_counts
         WHERE minute >= ?1 AND minute < ?2 AND reason IN (SELECT value FROM json_each(?3)) GROUP BY minute`,
		)
		.bind(from, to, reasonsJson);
}

/** Counts per reason since `minute` of the listed reasons (rows: `{reason, n}`). */
export function rejectionsOfReasonsSince(db: D1Database, minute: number, reasonsJson: string): D1PreparedStatement {
	return db
		.prepare(
			`SELECT reason, sum(count) AS n FROM rejection_counts
         WHERE minute >= ?1 AND reason IN (SELECT value FROM json_each(?2)) GROUP BY reason`,
		)
		.bind(minute, reasonsJson);
}

/** Deletes at most `chunk` log rows older than `before`. */
export function pruneRejections(db: D1Database, before: number, chunk: number): D1PreparedStatement {
	return db
		.prepare("DELETE FROM rejections WHERE id IN (SELECT id FROM rejections WHERE at < ?1 LIMIT ?2)")
		.bind(before, chunk);
}

/** Deletes at most `chunk` counter rows of minutes before `minute`. */
export function pruneRejectionCounts(db: D1Database, minute: number, chunk: number): D1PreparedStatement {
	return db
		.prepare(
			"DELETE FROM rejection_counts WHERE rowid IN (SELECT rowid FROM rejection_counts WHERE minute < ?1 LIMIT ?2)",
		)
		.bind(minute, chunk);
}
