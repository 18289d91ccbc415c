/**
 * Executes claimed outbox rows: external parts first, then one D1 batch that applies every
 * handler's writes and marks its effect done (one round trip for the whole set).
 * The `effects_done_once` trigger (migrations/0001) aborts a batch that would mark an effect
 * done twice, so racing executors cannot apply local writes twice.
 */
import {
	type ClaimedEffectRow,
	claimFailedEffect,
	claimLapsedEffects,
	effectStatus,
	markEffectDone,
	markEffectRetry,
} from "../db/effects";
import { fanOut, globalId, locate, type Shard } from "../db/shards";
import { type Config, type Env, getShards } from "../env";
import { errorMessage, log } from "../log";
import { backoff } from "../time";
import { type Effect, type EffectContext, handlers } from "./handlers";
import type { EffectKind } from "./rules";

/** How long an executor holds a claimed effect before the sweep may take it over. */
export const EFFECT_CLAIM_MS = 60_000;

export type { ClaimedEffectRow };

/**
 * Attempts before an effect is given up: it becomes `failed`, the `failed_effects` alert fires
 * (src/sweep/alerts.ts), and only `POST /admin/effects/:id/retry` runs it again, with a fresh
 * budget. With the backoff below, the waits after attempts 1..9 are 1, 2, 4, 8, 16, 32, 60, 60
 * and 60 minutes: the 10th attempt comes about 4 h 3 min after the first (plus up to a minute per
 * attempt for the sweep's tick), so an outage of the called system of up to ~4 h heals by itself.
 */
export const EFFECT_MAX_ATTEMPTS = 10;

/** Backoff for a failed effect: 1, 2, 4 ... minutes, capped at an hour. */
export function effectRetryDelayMs(attempts: number): number {
	return backoff(attempts, 60_000, 60 * 60_000);
}

/**
 * The effect as its handler sees it. Its id names its shard (src/db/shards.ts), like the admin API's:
 * handlers send it as an idempotency key, and two shards' local ids collide.
 */
function toEffect(row: ClaimedEffectRow, shard: Shard): Effect | null {
	if (!Object.hasOwn(handlers, row.kind)) return null;
	const id = globalId(shard.index, row.id);
	return { id, kind: row.kind as EffectKind, attempts: row.attempts, payload: JSON.parse(row.payload) };
}

export interface ExecuteReport {
	done: number;
	failed: number;
}

/** Runs effects claimed in `shard`: their writes and "mark done" commit in that shard (src/db/shards.ts). */
export async function executeEffects(
	env: Env,
	config: Config,
	shard: Shard,
	rows: readonly ClaimedEffectRow[],
	nowMs: number,
): Promise<ExecuteReport> {
	if (rows.length === 0) return { done: 0, failed: 0 };
	const db = shard.db;
	const ctx: EffectContext = { env, config };
	const outcomes = await Promise.all(
		rows.map(async (row) => {
			try {
				const effect = toEffect(row, shard);
				if (!effect) throw new Error(`no handler for effect kind ${row.kind}`);
				const handler = handlers[effect.kind];
				await handler.run?.(effect, ctx);
				const writes = handler.writes?.(effect, db) ?? [];
				return { row, statements: [...writes, markEffectDone(db, row.id, nowMs)], error: null };
			} catch (err) {
				const error = errorMessage(err);
				const attempts = row.attempts + 1;
				if (attempts >= EFFECT_MAX_ATTEMPTS)
					log("error", "effect_gave_up", { effectId: globalId(shard.index, row.id), kind: row.kind, attempts, error });
				else log("warn", "effect_failed", { effectId: globalId(shard.index, row.id), kind: row.kind, attempts, error });
				return {
					row,
					statements: [
						markEffectRetry(db, row.id, error, nowMs + effectRetryDelayMs(row.attempts + 1), EFFECT_MAX_ATTEMPTS),
					],
					error,
				};
			}
		}),
	);
	const failed = outcomes.filter((o) => o.error !== null).length;
	try {
		await db.batch(outcomes.flatMap((o) => o.statements));
		return { done: outcomes.length - failed, failed };
	} catch (err) {
		if (!errorMessage(err).includes("effect already done")) throw err;
	}
	// Another executor finished one of these first: commit the rest one by one.
	let done = 0;
	for (const o of outcomes) {
		try {
			await db.batch(o.statements);
			if (o.error === null) done++;
		} catch (err) {
			if (!errorMessage(err).includes("effect already done")) throw err;
		}
	}
	return { done, failed };
}

/** Lapsed effects the sweep takes over per tick. */
export const EFFECT_SWEEP_LIMIT = 50;

/** The sweep's share: take over pending effects whose claim has lapsed, and run them: `limit` in each shard. */
export async function retryPendingEffects(
	env: Env,
	config: Config,
	nowMs: number,
	limit = EFFECT_SWEEP_LIMIT,
): Promise<ExecuteReport> {
	const reports = await fanOut(getShards(env), async (shard) => {
		const claimed = await claimLapsedEffects(shard.db, nowMs + EFFECT_CLAIM_MS, nowMs, limit);
		return executeEffects(env, config, shard, claimed, nowMs);
	});
	return { done: reports.reduce((n, r) => n + r.done, 0), failed: reports.reduce((n, r) => n + r.failed, 0) };
}

export type HandRetry = { claimed: ClaimedEffectRow } | { status: string } | null;

/**
 * `POST /admin/effects/:id/retry`: a `failed` effect goes back to `pending` with a fresh budget
 * (attempts from 0), claimed by the caller to run now; if that run dies, the sweep takes it over
 * when the claim lapses. Only a `failed` effect moves, in one statement, so two concurrent retries
 * claim it once; and its D1 writes still commit with "mark done", which the `effects_done_once`
 * trigger (migrations/0001) lets happen once. Returns the effect's status when it is not failed,
 * null when there is no such effect.
 */
export async function claimForHandRetry(db: D1Database, id: number, nowMs: number): Promise<HandRetry> {
	const [claimed, current] = await db.batch<ClaimedEffectRow & { status: string }>([
		claimFailedEffect(db, id, nowMs + EFFECT_CLAIM_MS),
		effectStatus(db, id),
	]);
	const row = claimed?.results[0];
	if (row) return { claimed: row };
	const status = current?.results[0]?.status;
	return status === undefined ? null : { status };
}

export type HandRetryOutcome =
	| { outcome: "not_found" }
	| { outcome: "not_failed"; status: string }
	| { outcome: "started"; run: Promise<void> };

/**
 * The hand retry as the admin API and the console start it: claim, then run in the caller's
 * waitUntil (`run` never rejects). If that run dies, the sweep takes it over once the claim lapses.
 */
export async function startHandRetry(env: Env, config: Config, id: number, nowMs: number): Promise<HandRetryOutcome> {
	// `id` is the effect's id as the admin API shows it, which names its shard (src/db/shards.ts).
	const at = locate(getShards(env), id);
	if (!at) return { outcome: "not_found" };
	const retry = await claimForHandRetry(at.shard.db, at.id, nowMs);
	if (retry === null) return { outcome: "not_found" };
	if ("status" in retry) return { outcome: "not_failed", status: retry.status };
	const run = executeEffects(env, config, at.shard, [retry.claimed], nowMs).then(
		() => undefined,
		(err) => log("error", "effect_retry_failed", { effectId: id, error: errorMessage(err) }),
	);
	return { outcome: "started", run };
}
