/**
 * Executes claimed outbox rows: external parts first, then one D1 batch that applies every
 * handler's writes and marks its effect done (one round trip for the whole set).
 * The `effects_done_once` trigger (migrations/0001) aborts a batch that would mark an effect
 * done twice, so racing executors cannot apply local writes twice.
 */
import type { Config, Env } from "../env";
import { errorMessage, log } from "../log";
import { type Effect, type EffectContext, handlers } from "./handlers";
import type { EffectKind } from "./rules";

/** How long an executor holds a claimed effect before the sweep may take it over. */
export const EFFECT_CLAIM_MS = 60_000;

export interface ClaimedEffectRow {
	id: number;
	kind: string;
	attempts: number;
	payload: string;
}

/** SELECT list shared by every statement that claims effects. */
export const CLAIMED_EFFECT_COLUMNS = "id, kind, attempts, payload";

/** Backoff for a failed effect: 1, 2, 4 ... minutes, capped at an hour. */
export function effectRetryDelayMs(attempts: number): number {
	return Math.min(60 * 60_000, 60_000 * 2 ** Math.max(0, attempts - 1));
}

function toEffect(row: ClaimedEffectRow): Effect | null {
	if (!Object.hasOwn(handlers, row.kind)) return null;
	return { id: row.id, kind: row.kind as EffectKind, attempts: row.attempts, payload: JSON.parse(row.payload) };
}

function markDone(db: D1Database, id: number, nowMs: number): D1PreparedStatement {
	return db
		.prepare(
			"UPDATE effects SET status = 'done', done_at = ?2, claimed_until = 0, attempts = attempts + 1, last_error = NULL WHERE id = ?1",
		)
		.bind(id, nowMs);
}

function markRetry(db: D1Database, id: number, attempts: number, error: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(
			"UPDATE effects SET attempts = attempts + 1, last_error = ?2, claimed_until = ?3 WHERE id = ?1 AND status = 'pending'",
		)
		.bind(id, error, nowMs + effectRetryDelayMs(attempts + 1));
}

export interface ExecuteReport {
	done: number;
	failed: number;
}

export async function executeEffects(
	env: Env,
	config: Config,
	rows: readonly ClaimedEffectRow[],
	nowMs: number,
): Promise<ExecuteReport> {
	if (rows.length === 0) return { done: 0, failed: 0 };
	const db = env.DB;
	const ctx: EffectContext = { env, config };
	const outcomes = await Promise.all(
		rows.map(async (row) => {
			try {
				const effect = toEffect(row);
				if (!effect) throw new Error(`no handler for effect kind ${row.kind}`);
				const handler = handlers[effect.kind];
				await handler.run?.(effect, ctx);
				const writes = handler.writes?.(effect, db) ?? [];
				return { row, statements: [...writes, markDone(db, row.id, nowMs)], error: null };
			} catch (err) {
				const error = errorMessage(err);
				log("warn", "effect_failed", { effectId: row.id, kind: row.kind, attempts: row.attempts + 1, error });
				return { row, statements: [markRetry(db, row.id, row.attempts, error, nowMs)], error };
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

/** The sweep's share: take over pending effects whose claim has lapsed, and run them. */
export async function retryPendingEffects(env: Env, config: Config, nowMs: number, limit = 50): Promise<ExecuteReport> {
	const claimed = await env.DB.prepare(
		`UPDATE effects SET claimed_until = ?1
     WHERE id IN (SELECT id FROM effects WHERE status = 'pending' AND claimed_until <= ?2 ORDER BY id LIMIT ?3)
     RETURNING ${CLAIMED_EFFECT_COLUMNS}`,
	)
		.bind(nowMs + EFFECT_CLAIM_MS, nowMs, limit)
		.all<ClaimedEffectRow>();
	return executeEffects(env, config, claimed.results, nowMs);
}
