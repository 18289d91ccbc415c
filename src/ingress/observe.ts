/**
 * What every webhook request leaves behind after its answer: one structured log line, one
 * Analytics Engine data point (when the binding is configured), the rejection count, and the
 * "enqueued" mark with the ack latency. All of it runs in waitUntil, off the answer path.
 */
import { locate } from "../db/shards";
import { type Env, getShards } from "../env";
import { errorMessage, log } from "../log";
import { markEnqueuedSoon } from "./inbox";
import type { Receipt } from "./receive";
import { noteRejection } from "./rejections";

export interface Observation {
	env: Env;
	provider: string;
	receipt: Receipt;
	ackMs: number;
	nowMs: number;
	clientIp: string | null;
}

export async function observe({ env, provider, receipt: r, ackMs, nowMs, clientIp }: Observation): Promise<void> {
	const level = r.outcome === "rejected" || r.outcome === "unavailable" ? "warn" : "info";
	log(level, "webhook", {
		provider,
		outcome: r.outcome,
		status: r.status,
		reason: r.reason,
		ackMs,
		size: r.size,
		messageId: r.messageId,
		deliveryId: r.deliveryId,
	});
	// Analytics Engine: blob1 provider, blob2 outcome, blob3 reason; double1 status, double2 ack ms.
	env.WEBHOOK_ANALYTICS?.writeDataPoint({
		indexes: [provider],
		blobs: [provider, r.outcome, r.reason ?? ""],
		doubles: [r.status, ackMs],
	});
	if (r.outcome === "rejected") {
		// Counted in memory and written with others' (rejections.ts): no D1 write per rejection.
		await noteRejection(env.DB, {
			provider,
			reason: r.reason ?? "unknown",
			status: r.status,
			size: r.size,
			ip: clientIp,
			at: nowMs,
		});
	}
	if ((r.outcome === "accepted" || r.outcome === "resent") && r.deliveryId !== null) {
		// If this write is lost, the sweep re-sends the row and the consumer dedupes.
		const at = locate(getShards(env), r.deliveryId);
		if (!at) return;
		const mark = { id: at.id, ackMs: r.outcome === "accepted" ? ackMs : null };
		await markEnqueuedSoon(at.shard.db, mark, nowMs)?.catch((err) =>
			log("warn", "mark_enqueued_failed", { deliveryId: r.deliveryId, error: errorMessage(err) }),
		);
	}
}
