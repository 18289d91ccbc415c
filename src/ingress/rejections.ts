/**
 * The rejection log: metadata of every refused request (DESIGN invariant 1). Never the body and
 * never a signature header: a rejected body is unverified input.
 */
import { errorMessage, log } from "../log";

export type RejectionReason = string;

export interface Rejection {
	provider: string;
	reason: RejectionReason;
	status: number;
	size: number;
	ip: string | null;
	at: number;
}

export async function recordRejection(db: D1Database, r: Rejection): Promise<void> {
	try {
		await db
			.prepare("INSERT INTO rejections (provider, reason, status, size, ip, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
			.bind(r.provider.slice(0, 64), r.reason, r.status, r.size, r.ip, r.at)
			.run();
	} catch (err) {
		// Losing a rejection record loses no delivery: log and move on.
		log("error", "rejection_not_recorded", { provider: r.provider, reason: r.reason, error: errorMessage(err) });
	}
}
