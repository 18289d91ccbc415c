/**
 * The rejection log: metadata of refused requests (docs/design.md invariant 1). Never the body and
 * never a signature header: a rejected body is unverified input.
 *
 * A rejection costs no D1 write of its own (docs/design.md invariant 8): rejections are counted
 * per isolate in memory, per (minute, provider, reason), and written together at most once per
 * REJECTION_FLUSH_MS, one D1 batch per flush. The log keeps a sample: the first
 * REJECTION_SAMPLES_PER_MINUTE of each reason in each minute (per isolate), in a ring of
 * REJECTION_LOG_CAP rows. So a flood of junk costs a few writes per isolate per interval, however
 * many requests it sends; what an evicted isolate had not flushed yet is lost (counts only, never
 * a delivery).
 */
import { addRejectionCounts, addRejectionSamples } from "../db/rejections";
import { errorMessage, log } from "../log";

export const REJECTION_LOG_CAP = 5_000;
/** How long the request that opens the buffer waits before writing it (one batch). */
export const REJECTION_FLUSH_MS = 2_000;
export const REJECTION_SAMPLES_PER_MINUTE = 5;
/** The flush interval in use; tests that are not about the interval shorten it. */
export const rejectionFlush = { intervalMs: REJECTION_FLUSH_MS };

export interface Rejection {
	/** A known provider name, or a fixed bucket such as "(unknown)": never a name from the path. */
	provider: string;
	reason: string;
	status: number;
	size: number;
	ip: string | null;
	at: number;
}

interface Buffer {
	/** JSON `[minute, provider, reason]` -> count. Bounded: providers and reasons are fixed codes. */
	counts: Map<string, number>;
	samples: Rejection[];
}

interface IsolateState {
	buffer: Buffer | null;
	/** Samples taken per reason in `minute`, across flushes. */
	minute: number;
	sampled: Map<string, number>;
}

// Keyed by the D1 binding, as the inbox's mark buffer is: requests share only this plain data,
// never a promise (a Worker must not await I/O started by another request).
const states = new WeakMap<D1Database, IsolateState>();

/**
 * Counts one rejection. Returns the flush to wait for (in the caller's waitUntil) when this call
 * opened the buffer, else null: the request that opened it writes it.
 */
export function noteRejection(db: D1Database, r: Rejection): Promise<void> | null {
	let state = states.get(db);
	if (!state) {
		state = { buffer: null, minute: -1, sampled: new Map() };
		states.set(db, state);
	}
	const minute = Math.floor(r.at / 60_000);
	if (minute !== state.minute) {
		state.minute = minute;
		state.sampled.clear();
	}
	const sample = {
		...r,
		provider: r.provider.slice(0, 64),
		reason: r.reason.slice(0, 64),
		ip: r.ip?.slice(0, 64) ?? null,
	};
	const key = JSON.stringify([minute, sample.provider, sample.reason]);
	const taken = state.sampled.get(sample.reason) ?? 0;
	const keep = taken < REJECTION_SAMPLES_PER_MINUTE;
	if (keep) state.sampled.set(sample.reason, taken + 1);

	const open = state.buffer;
	if (open) {
		open.counts.set(key, (open.counts.get(key) ?? 0) + 1);
		if (keep) open.samples.push(sample);
		return null;
	}
	const buffer: Buffer = { counts: new Map([[key, 1]]), samples: keep ? [sample] : [] };
	state.buffer = buffer;
	const owner = state;
	return (async () => {
		await new Promise((resolve) => setTimeout(resolve, rejectionFlush.intervalMs));
		if (owner.buffer === buffer) owner.buffer = null;
		try {
			await db.batch(flushStatements(db, buffer));
		} catch (err) {
			// Losing rejection records loses no delivery: log and move on.
			log("error", "rejections_not_recorded", { count: sum(buffer.counts), error: errorMessage(err) });
		}
	})();
}

function sum(counts: Map<string, number>): number {
	let n = 0;
	for (const c of counts.values()) n += c;
	return n;
}

/** At most two statements, each with one JSON parameter (D1's 100 bound parameters never reached). */
function flushStatements(db: D1Database, buffer: Buffer): D1PreparedStatement[] {
	const counts = [...buffer.counts].map(([key, count]) => {
		const [minute, provider, reason] = JSON.parse(key) as [number, string, string];
		return { minute, provider, reason, count };
	});
	const statements = [addRejectionCounts(db, JSON.stringify(counts))];
	if (buffer.samples.length > 0)
		statements.push(addRejectionSamples(db, REJECTION_LOG_CAP, JSON.stringify(buffer.samples)));
	return statements;
}
