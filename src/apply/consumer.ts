/**
 * The EVENTS consumer: turns a batch of pointers and snapshots into ordered state and
 * first-observation effects in at most three D1 round trips:
 *   1. load the raw deliveries the pointers name (one query);
 *   2. one batch: monotonic upserts, delivery outcomes, effect rows, effect claims;
 *   3. one batch: execute the claimed effects and mark them done.
 * A failure in 1 or 2 retries every message with backoff (nothing was committed); effects that
 * fail in 3 stay pending for the sweep, since the state they follow is already committed.
 */

import { type ClaimedEffectRow, EFFECT_CLAIM_MS, executeEffects } from "../effects/executor";
import { effectsFor } from "../effects/rules";
import type { Config, Env } from "../env";
import { errorMessage, log } from "../log";
import { getProvider, storedHeaders } from "../providers";
import type { QueueMessage } from "../queue/messages";
import { type FailedWork, failReconcileWork } from "../reconcile/dead-letters";
import {
	type ApplyRow,
	CLAIM_EFFECTS,
	type EffectRow,
	INSERT_EFFECTS,
	jsonChunks,
	MARK_APPLIED,
	MARK_FAILED,
	MARK_IGNORED,
	UPSERT_RESOURCES,
} from "./statements";

interface StoredDelivery {
	id: number;
	provider: string;
	raw_body: string | null;
	headers: string | null;
}

export interface ApplyPlan {
	rows: ApplyRow[];
	effects: EffectRow[];
	ignored: number[];
	failed: { ref: number; error: string }[];
}

/** Exponential backoff for a message whose work failed: 10 s, 20 s, 40 s ... capped at 10 min. */
export function retryDelaySeconds(attempts: number): number {
	return Math.min(600, 5 * 2 ** Math.max(1, attempts));
}

/** Pure: what the batch should do, given the messages and the stored deliveries they point to. */
export function planBatch(
	messages: readonly QueueMessage[],
	stored: ReadonlyMap<number, StoredDelivery>,
	config: Config,
): ApplyPlan {
	const plan: ApplyPlan = { rows: [], effects: [], ignored: [], failed: [] };
	const add = (row: ApplyRow) => {
		plan.rows.push(row);
		for (const seed of effectsFor(row.provider, row)) {
			plan.effects.push({ provider: row.provider, type: row.type, id: row.id, version: row.version, ...seed });
		}
	};
	for (const m of messages) {
		if (m.kind === "snapshot") {
			add({ ref: null, provider: m.provider, ...m.resource, source: "reconcile" });
			continue;
		}
		const d = stored.get(m.deliveryId);
		if (!d) continue; // pruned past DEDUPE_RETENTION_DAYS: nothing left to apply
		const provider = getProvider(d.provider);
		if (!provider) {
			plan.failed.push({ ref: d.id, error: `unknown provider ${d.provider}` });
			continue;
		}
		if (d.raw_body === null) {
			plan.failed.push({ ref: d.id, error: "raw body no longer retained (RETENTION_DAYS)" });
			continue;
		}
		// A body that verified at ingress but does not parse now cannot succeed on retry: it is a
		// poison message. It goes straight to `failed` (visible, replayable once the code is fixed).
		const parsed = provider.parse(d.raw_body, storedHeaders(d.headers), config);
		if (!parsed.ok) {
			plan.failed.push({ ref: d.id, error: `unparseable: ${parsed.reason}` });
		} else if (parsed.event.resource === null) {
			plan.ignored.push(d.id);
		} else {
			add({ ref: d.id, provider: provider.name, ...parsed.event.resource, source: "webhook" });
		}
	}
	return plan;
}

function planStatements(db: D1Database, plan: ApplyPlan, nowMs: number): D1PreparedStatement[] {
	const s: D1PreparedStatement[] = [];
	const each = (sql: string, rows: readonly unknown[], ...extra: unknown[]) => {
		for (const chunk of jsonChunks(rows)) s.push(db.prepare(sql).bind(chunk, nowMs, ...extra));
	};
	each(UPSERT_RESOURCES, plan.rows);
	each(
		MARK_APPLIED,
		plan.rows
			.filter((r) => r.ref !== null)
			.map(({ ref, provider, type, id, version }) => ({ ref, provider, type, id, version })),
	);
	each(INSERT_EFFECTS, plan.effects);
	each(MARK_IGNORED, plan.ignored);
	each(MARK_FAILED, plan.failed);
	const keys = plan.rows.map(({ provider, type, id }) => ({ provider, type, id }));
	for (const chunk of jsonChunks(keys)) {
		s.push(db.prepare(CLAIM_EFFECTS).bind(chunk, nowMs + EFFECT_CLAIM_MS, nowMs));
	}
	return s;
}

export async function consumeEvents(batch: MessageBatch<QueueMessage>, env: Env, config: Config): Promise<void> {
	const nowMs = Date.now();
	const work: Message<QueueMessage>[] = [];
	for (const m of batch.messages) {
		const body = m.body as Partial<QueueMessage> | null;
		if (body?.kind === "delivery" || body?.kind === "snapshot") work.push(m);
		else {
			log("error", "unknown_queue_message", { queue: batch.queue, id: m.id });
			m.ack();
		}
	}
	if (work.length === 0) return;

	let claimed: ClaimedEffectRow[];
	try {
		const ids = work.flatMap((m) => (m.body.kind === "delivery" ? [m.body.deliveryId] : []));
		const stored = new Map<number, StoredDelivery>();
		if (ids.length > 0) {
			const { results } = await env.DB.prepare(
				"SELECT id, provider, raw_body, headers FROM deliveries WHERE id IN (SELECT value FROM json_each(?1))",
			)
				.bind(JSON.stringify(ids))
				.all<StoredDelivery>();
			for (const r of results) stored.set(r.id, r);
		}
		const plan = planBatch(
			work.map((m) => m.body),
			stored,
			config,
		);
		const statements = planStatements(env.DB, plan, nowMs);
		const results = statements.length > 0 ? await env.DB.batch<ClaimedEffectRow>(statements) : [];
		// Only the claim statements return rows.
		claimed = results.flatMap((r) => r.results ?? []);
		log("info", "batch_applied", {
			messages: work.length,
			applied: plan.rows.length,
			ignored: plan.ignored.length,
			failed: plan.failed.length,
			effects: claimed.length,
		});
	} catch (err) {
		const error = errorMessage(err);
		log("error", "batch_apply_failed", { messages: work.length, error });
		for (const m of work) m.retry({ delaySeconds: retryDelaySeconds(m.attempts) });
		await recordTransientError(env.DB, work, error);
		return;
	}
	for (const m of work) m.ack();

	try {
		await executeEffects(env, config, claimed, nowMs);
	} catch (err) {
		// Committed state; the effects stay pending and the sweep runs them once the claim lapses.
		log("error", "effects_execution_failed", { effects: claimed.length, error: errorMessage(err) });
	}
}

/** Best effort, off the success path: keep the last error visible on the rows being retried. */
async function recordTransientError(db: D1Database, work: readonly Message<QueueMessage>[], error: string) {
	const ids = work.flatMap((m) => (m.body.kind === "delivery" ? [m.body.deliveryId] : []));
	if (ids.length === 0) return;
	try {
		await db
			.prepare("UPDATE deliveries SET last_error = ?2 WHERE id IN (SELECT value FROM json_each(?1))")
			.bind(JSON.stringify(ids), error)
			.run();
	} catch {
		// D1 is what failed; the error is in the log line above.
	}
}

/**
 * The dead-letter consumer: a delivery whose retries are exhausted becomes `failed`, visible
 * and replayable. A dead-lettered reconcile snapshot fails its window and run, so the watermark
 * stays before it and the next reconciliation lists the order again (src/reconcile/dead-letters.ts).
 */
export async function consumeDeadLetters(batch: MessageBatch<QueueMessage>, env: Env): Promise<void> {
	const nowMs = Date.now();
	const ids: number[] = [];
	const snapshots: FailedWork[] = [];
	for (const m of batch.messages) {
		const body = m.body as Partial<QueueMessage> | null;
		if (body?.kind === "delivery" && typeof body.deliveryId === "number") ids.push(body.deliveryId);
		else if (body?.kind === "snapshot" && typeof body.runId === "string" && body.resource) {
			snapshots.push({
				runId: body.runId,
				wallet: body.window?.wallet ?? body.resource.wallet,
				idx: body.window?.idx ?? null,
				error: `snapshot ${body.resource.id} dead-lettered`,
			});
		} else log("error", "dead_lettered_message", { kind: body?.kind ?? null, id: m.id });
	}
	if (ids.length > 0) {
		await markDeadLettered(env.DB, ids, nowMs);
		log("error", "deliveries_dead_lettered", { count: ids.length });
	}
	await failReconcileWork(env.DB, snapshots, nowMs);
	batch.ackAll();
}

export function markDeadLettered(db: D1Database, ids: readonly number[], nowMs: number): Promise<D1Result> {
	return db
		.prepare(
			`UPDATE deliveries SET status = 'failed', status_at = ?2, send_token = NULL,
         last_error = coalesce(last_error, 'queue retries exhausted')
       WHERE id IN (SELECT value FROM json_each(?1)) AND status IN ('received', 'enqueued')`,
		)
		.bind(JSON.stringify(ids), nowMs)
		.run();
}
