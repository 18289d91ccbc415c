/**
 * Replay: re-enqueue stored raw deliveries under their original message id, so the idempotent
 * consumer treats them exactly like the original (a sender's own replay keeps the message id too,
 * docs/providers.md 1.1).
 * A replayed `failed` delivery that now applies becomes `processed`. A body moved to the R2
 * archive is replayable too: the consumer reads it back from there.
 */
import { replayPage } from "../db/deliveries";
import type { Shard } from "../db/shards";
import { type Env, getShards } from "../env";
import { SEND_BATCH_LIMIT, sendPointers } from "./enqueue";

export interface ReplayFilter {
	provider?: string;
	messageId?: string;
	status?: string;
	/** Epoch ms: only deliveries received at or after it. */
	since?: number;
	/** Only this shard (src/db/shards.ts): the row an operator is looking at, by its message id. */
	shard?: number;
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
	// Shard by shard: `limit` bounds the whole call.
	const all = getShards(env).all;
	for (const shard of filter.shard === undefined ? all : all.filter((s) => s.index === filter.shard)) {
		replayed += await replayInShard(env, shard, filter, nowMs, limit - replayed);
		if (replayed >= limit) break;
	}
	return replayed;
}

async function replayInShard(
	env: Env,
	shard: Shard,
	filter: ReplayFilter,
	nowMs: number,
	limit: number,
): Promise<number> {
	let replayed = 0;
	let afterId = 0;
	while (replayed < limit) {
		const take = Math.min(SEND_BATCH_LIMIT, limit - replayed);
		const results = await replayPage(
			shard.db,
			nowMs,
			afterId,
			{
				provider: filter.provider ?? null,
				messageId: filter.messageId ?? null,
				status: filter.status ?? null,
				since: filter.since ?? null,
			},
			take,
		);
		if (results.length === 0) break;
		await sendPointers(env, shard, results, nowMs);
		replayed += results.length;
		afterId = Math.max(...results.map((r) => r.id));
		if (results.length < take) break;
	}
	return replayed;
}
