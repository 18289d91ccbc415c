/**
 * Every statement on `effects`, the outbox (docs/design.md invariant 6): rows written by the
 * consumer's apply batch, claimed and executed by src/effects/executor.ts, retried by the sweep,
 * read by the admin API, metrics and alerts.
 */
import type { SqlRow, WithStatus } from "./rows";
import type { effects } from "./schema";

export const EFFECT_STATUSES = ["pending", "done", "failed"] as const;
export type EffectStatus = (typeof EFFECT_STATUSES)[number];
export type EffectRow = WithStatus<SqlRow<typeof effects>, EffectStatus>;

/** What a claim returns: the executor's input. */
export type ClaimedEffectRow = Pick<EffectRow, "id" | "kind" | "attempts" | "payload">;

/** SELECT list shared by every statement that claims effects. */
const CLAIMED_EFFECT_COLUMNS = "id, kind, attempts, payload";

/**
 * Invariant 6: effect rows only for snapshots the state now holds, unique per (resource, kind),
 * in the same transaction as the state change. `rowsJson`: one JSON array of
 * `{provider, type, wallet, id, version, status, kind, payload}` (src/apply/statements.ts).
 */
export function insertEffects(db: D1Database, rowsJson: string, nowMs: number): D1PreparedStatement {
	return db
		.prepare(`
INSERT INTO effects (provider, resource_type, resource_wallet, resource_id, kind, status, payload, created_at)
SELECT j.provider, j.type, j.wallet, j.rid, j.kind, 'pending', j.payload, ?2
FROM (SELECT value->>'provider' AS provider, value->>'type' AS type, coalesce(value->>'wallet', '') AS wallet,
             value->>'id' AS rid, value->>'version' AS version, value->>'status' AS status,
             value->>'kind' AS kind, value->'payload' AS payload
      FROM json_each(?1)) AS j
JOIN resources AS r ON r.provider = j.provider AND r.type = j.type AND r.wallet = j.wallet AND r.id = j.rid
  AND r.version = j.version AND r.status = j.status
WHERE true
ON CONFLICT (provider, resource_type, resource_wallet, resource_id, kind) DO NOTHING`)
		.bind(rowsJson, nowMs);
}

/**
 * Claims the pending effects of the touched resources (`keysJson`: `{provider, type, wallet, id}`)
 * for execution right after commit, until `claimedUntil` (rows: ClaimedEffectRow).
 */
export function claimEffectsOf(
	db: D1Database,
	keysJson: string,
	claimedUntil: number,
	nowMs: number,
): D1PreparedStatement {
	return db
		.prepare(`
UPDATE effects SET claimed_until = ?2
WHERE status = 'pending' AND claimed_until <= ?3
  AND (provider, resource_type, resource_wallet, resource_id) IN
      (SELECT value->>'provider', value->>'type', coalesce(value->>'wallet', ''), value->>'id' FROM json_each(?1))
RETURNING ${CLAIMED_EFFECT_COLUMNS}`)
		.bind(keysJson, claimedUntil, nowMs);
}

/** Takes over at most `limit` pending effects whose claim has lapsed, until `claimedUntil`. */
export async function claimLapsedEffects(
	db: D1Database,
	claimedUntil: number,
	nowMs: number,
	limit: number,
): Promise<ClaimedEffectRow[]> {
	const { results } = await db
		.prepare(
			`UPDATE effects SET claimed_until = ?1
     WHERE id IN (SELECT id FROM effects WHERE status = 'pending' AND claimed_until <= ?2 ORDER BY id LIMIT ?3)
     RETURNING ${CLAIMED_EFFECT_COLUMNS}`,
		)
		.bind(claimedUntil, nowMs, limit)
		.all<ClaimedEffectRow>();
	return results;
}

/** A `failed` effect back to `pending` with a fresh budget, claimed until `claimedUntil` (rows: ClaimedEffectRow). */
export function claimFailedEffect(db: D1Database, id: number, claimedUntil: number): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE effects SET status = 'pending', attempts = 0, claimed_until = ?2
         WHERE id = ?1 AND status = 'failed' RETURNING ${CLAIMED_EFFECT_COLUMNS}`,
		)
		.bind(id, claimedUntil);
}

/** One effect's status (rows: `{status}`). */
export function effectStatus(db: D1Database, id: number): D1PreparedStatement {
	return db.prepare("SELECT status FROM effects WHERE id = ?1").bind(id);
}

/** Batched with the handler's writes: the `effects_done_once` trigger (migrations/0001) lets it happen once. */
export function markEffectDone(db: D1Database, id: number, nowMs: number): D1PreparedStatement {
	return db
		.prepare(
			"UPDATE effects SET status = 'done', done_at = ?2, claimed_until = 0, attempts = attempts + 1, last_error = NULL WHERE id = ?1",
		)
		.bind(id, nowMs);
}

/** Counts the failed attempt in SQL, so racing executors cannot stretch the budget of `maxAttempts`. */
export function markEffectRetry(
	db: D1Database,
	id: number,
	error: string,
	retryAt: number,
	maxAttempts: number,
): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE effects SET attempts = attempts + 1, last_error = ?2,
         status = CASE WHEN attempts + 1 >= ?4 THEN 'failed' ELSE 'pending' END,
         claimed_until = CASE WHEN attempts + 1 >= ?4 THEN 0 ELSE ?3 END
       WHERE id = ?1 AND status = 'pending'`,
		)
		.bind(id, error, retryAt, maxAttempts);
}

export type EffectListRow = Pick<
	EffectRow,
	| "id"
	| "provider"
	| "resource_type"
	| "resource_id"
	| "kind"
	| "status"
	| "attempts"
	| "last_error"
	| "created_at"
	| "done_at"
>;

/** A page of effects, newest first, below id `below`, of one status or all. */
export async function effectPage(
	db: D1Database,
	status: EffectStatus | null,
	below: number,
	take: number,
): Promise<EffectListRow[]> {
	const { results } = await db
		.prepare(
			`SELECT id, provider, resource_type, resource_id, kind, status, attempts, last_error, created_at, done_at
       FROM effects
       WHERE id < ?1 AND (?2 IS NULL OR status = ?2)
       ORDER BY id DESC LIMIT ?3`,
		)
		.bind(below, status, take)
		.all<EffectListRow>();
	return results;
}

/** Effects per status (rows: `{s, n}`). */
export function countEffectsByStatus(db: D1Database): D1PreparedStatement {
	return db.prepare("SELECT status AS s, count(*) AS n FROM effects GROUP BY status");
}

/** Effects given up (rows: `{n}`). */
export function countFailedEffects(db: D1Database): D1PreparedStatement {
	return db.prepare("SELECT count(*) AS n FROM effects WHERE status = 'failed'");
}

export function isEffectStatus(s: unknown): s is EffectStatus {
	return (EFFECT_STATUSES as readonly unknown[]).includes(s);
}
