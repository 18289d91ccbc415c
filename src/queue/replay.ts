/**
 * Replay: re-enqueue stored raw deliveries under their original message id, so the idempotent
 * consumer treats them exactly like the original (BlooBank's own replay keeps the messageId too).
 * A replayed `failed` delivery that now applies becomes `processed`. A body moved to the R2
 * archive is replayable too: the consumer reads it back from there.
 */
import type { Env } from "../env";
import { type DeliveryPointerRow, SEND_BATCH_LIMIT, sendPointers } from "./enqueue";

export interface ReplayFilter {
	provider?: string;
	messageId?: string;
	status?: string;
	/** Epoch ms: only deliveries received at or after it. */
	since?: number;
}

/** Upper bound per call: a bulk replay is paged by its caller, not run unbounded. */
export const REPLAY_LIMIT = 1_000;

export async function replayDeliveries(
	env: Env,
	filter: ReplayFilter,
	nowMs: number,
	limit = REPLAY_LIMIT,
): Promise<number> {
	let replayed = 0;
	let afterId = 0;
	while (replayed < limit) {
		const take = Math.min(SEND_BATCH_LIMIT, limit - replayed);
		const { results } = await env.DB.prepare(
			`UPDATE deliveries SET status = 'enqueued', status_at = ?1, send_token = NULL
       WHERE id IN (
         SELECT id FROM deliveries
         WHERE (raw_body IS NOT NULL OR archived_at IS NOT NULL) AND id > ?2
           AND (?3 IS NULL OR provider = ?3) AND (?4 IS NULL OR message_id = ?4)
           AND (?5 IS NULL OR status = ?5) AND (?6 IS NULL OR received_at >= ?6)
         ORDER BY id LIMIT ?7)
       RETURNING id, provider, message_id`,
		)
			.bind(
				nowMs,
				afterId,
				filter.provider ?? null,
				filter.messageId ?? null,
				filter.status ?? null,
				filter.since ?? null,
				take,
			)
			.all<DeliveryPointerRow>();
		if (results.length === 0) break;
		await sendPointers(env, results, nowMs);
		replayed += results.length;
		afterId = Math.max(...results.map((r) => r.id));
		if (results.length < take) break;
	}
	return replayed;
}
