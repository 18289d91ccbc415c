/**
 * The rejection log: metadata of every refused request (DESIGN invariant 1). Never the body and
 * never a signature header: a rejected body is unverified input. Bounded two ways: the log is a
 * ring of REJECTION_LOG_CAP rows, and the per-minute counters are pruned by the sweep.
 */
import { errorMessage, log } from "../log";

export const REJECTION_LOG_CAP = 5_000;

export interface Rejection {
	provider: string;
	reason: string;
	status: number;
	size: number;
	ip: string | null;
	at: number;
}

export function rejectionStatements(db: D1Database, r: Rejection): D1PreparedStatement[] {
	const provider = r.provider.slice(0, 64);
	return [
		db
			.prepare(
				`INSERT OR REPLACE INTO rejections (id, seq, provider, reason, status, size, ip, at)
         SELECT s % ?1, s, ?2, ?3, ?4, ?5, ?6, ?7 FROM (SELECT coalesce(max(seq), 0) + 1 AS s FROM rejections)`,
			)
			.bind(REJECTION_LOG_CAP, provider, r.reason, r.status, r.size, r.ip?.slice(0, 64) ?? null, r.at),
		db
			.prepare(
				`INSERT INTO rejection_counts (minute, provider, reason, count) VALUES (?1, ?2, ?3, 1)
         ON CONFLICT (minute, provider, reason) DO UPDATE SET count = count + 1`,
			)
			.bind(Math.floor(r.at / 60_000), provider, r.reason),
	];
}

/** One round trip, off the answer path (the caller passes it to waitUntil). */
export async function recordRejection(db: D1Database, r: Rejection): Promise<void> {
	try {
		await db.batch(rejectionStatements(db, r));
	} catch (err) {
		// Losing a rejection record loses no delivery: log and move on.
		log("error", "rejection_not_recorded", { provider: r.provider, reason: r.reason, error: errorMessage(err) });
	}
}
