/**
 * The EVENTS consumer: turns a batch of pointers and snapshots into ordered state and
 * first-observation effects in at most three D1 round trips per chunk:
 *   1. load the raw deliveries the pointers name, up to MAX_CHUNK_BODY_BYTES of bodies (a body
 *      already archived to R2, as a replay's is, is read back from there);
 *   2. one batch: monotonic upserts, delivery outcomes, effect rows, effect claims;
 *   3. one batch: execute the claimed effects and mark them done.
 * A batch whose bodies fit in one chunk (the usual case) is one chunk. A failure in 1 or 2
 * retries every message not yet applied, with backoff (nothing of theirs was committed); effects
 * that fail in 3 stay pending for the sweep, since the state they follow is already committed.
 */

import { storedBody } from "../db/archive";
import {
	loadDeliveryChunk,
	markApplied,
	markDeadLettered,
	markFailed,
	markIgnored,
	markRehomed,
	noteLastError,
	type StoredDelivery,
} from "../db/deliveries";
import { claimEffectsOf, insertEffects } from "../db/effects";
import { upsertResources } from "../db/resources";
import { globalId, groupByShard, layoutHolds, locate, type Shard, type Shards, shardOfResource } from "../db/shards";
import { type ClaimedEffectRow, EFFECT_CLAIM_MS, executeEffects } from "../effects/executor";
import { type Config, ConfigError, type Env, getConfig, getShards } from "../env";
import { errorMessage, log } from "../log";
import { effectsFor, getProvider, storedHeaders } from "../providers";
import type { Provider, ResourceSnapshot } from "../providers/types";
import { sendSnapshotMessages } from "../queue/enqueue";
import type { QueueMessage, SnapshotMessage } from "../queue/messages";
import { type FailedWork, failReconcileWork } from "../reconcile/dead-letters";
import { freshSnapshots } from "../reconcile/refresh";
import { backoff } from "../time";
import { type ApplyRow, type EffectRow, jsonChunks, sortedKeys } from "./statements";

/**
 * The most raw-body bytes one chunk loads into the isolate (128 MB of memory): a batch of 100
 * deliveries near the 1 MiB body cap is applied in chunks instead of all at once. A chunk holds
 * each body several times over (the text, the parsed value, its sorted copy, the JSON for two
 * statements): measured in Node, 16 MiB of small-object bodies took ~97 MB of heap, so 4 MiB.
 */
export const MAX_CHUNK_BODY_BYTES = 4 * 1024 * 1024;

export interface ApplyPlan {
	rows: ApplyRow[];
	effects: EffectRow[];
	ignored: number[];
	/**
	 * Deliveries whose resource lives in another shard: stored by message id when they named no
	 * resource, and parsed with one since (a replay after a fix). Never applied here.
	 */
	elsewhere: { ref: number | null; provider: Provider["name"]; resource: ResourceSnapshot; shard: number }[];
	failed: { ref: number; error: string }[];
}

/** Exponential backoff for a message whose work failed: 10 s, 20 s, 40 s ... capped at 10 min. */
export function retryDelaySeconds(attempts: number): number {
	return backoff(attempts, 10, 600);
}

/** Pure: what the batch should do, given the messages and the stored deliveries they point to. */
export function planBatch(
	messages: readonly QueueMessage[],
	stored: ReadonlyMap<number, StoredDelivery>,
	config: Config,
	/** The shard a resource lives in, when it is not this one (src/db/shards.ts); null when it is. */
	elsewhere: (provider: string, resource: ResourceSnapshot) => number | null = () => null,
): ApplyPlan {
	const plan: ApplyPlan = { rows: [], effects: [], ignored: [], elsewhere: [], failed: [] };
	const add = (provider: Provider, resource: ResourceSnapshot, ref: number | null, source: ApplyRow["source"]) => {
		const row: ApplyRow = {
			ref,
			provider: provider.name,
			...resource,
			data: sortedKeys(resource.data),
			source,
			rank: provider.statusRank(resource.status),
		};
		plan.rows.push(row);
		for (const seed of effectsFor(provider, row)) {
			const { type, wallet, id, version, status } = row;
			plan.effects.push({ provider: row.provider, type, wallet, id, version, status, ...seed });
		}
	};
	for (const m of messages) {
		if (m.kind === "snapshot") {
			const provider = getProvider(m.provider);
			if (!provider) {
				log("error", "snapshot_of_unknown_provider", { provider: m.provider });
				continue;
			}
			// Queued snapshots come to their resource's shard; a fresh one fetched for a moved row does not.
			const shard = elsewhere(provider.name, m.resource);
			if (shard === null) add(provider, m.resource, null, "reconcile");
			else plan.elsewhere.push({ ref: null, provider: provider.name, resource: m.resource, shard });
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
			plan.failed.push({ ref: d.id, error: "raw body no longer kept in D1 (RETENTION_DAYS) or the archive" });
			continue;
		}
		// A body that verified at ingress but does not parse now cannot succeed on retry: it is a
		// poison message. It goes straight to `failed` (visible, replayable once the code is fixed).
		const parsed = provider.parse(d.raw_body, storedHeaders(d.headers), config.providerSettings[provider.name]);
		if (!parsed.ok) {
			plan.failed.push({ ref: d.id, error: `unparseable: ${parsed.reason}` });
		} else if (parsed.event.resource === null) {
			plan.ignored.push(d.id);
		} else {
			const shard = elsewhere(provider.name, parsed.event.resource);
			if (shard === null) add(provider, parsed.event.resource, d.id, "webhook");
			else plan.elsewhere.push({ ref: d.id, provider: provider.name, resource: parsed.event.resource, shard });
		}
	}
	return plan;
}

function planStatements(db: D1Database, plan: ApplyPlan, nowMs: number): D1PreparedStatement[] {
	const s: D1PreparedStatement[] = [];
	const each = (
		build: (db: D1Database, rowsJson: string, nowMs: number) => D1PreparedStatement,
		rows: readonly unknown[],
	) => {
		for (const chunk of jsonChunks(rows)) s.push(build(db, chunk, nowMs));
	};
	each(upsertResources, plan.rows);
	each(
		markApplied,
		plan.rows
			.filter((r) => r.ref !== null)
			.map(({ ref, provider, type, wallet, id, version, status, data }) => ({
				ref,
				provider,
				type,
				wallet,
				id,
				version,
				status,
				data,
			})),
	);
	each(insertEffects, plan.effects);
	each(markIgnored, plan.ignored);
	each(
		markRehomed,
		plan.elsewhere.flatMap(({ ref, shard }) =>
			ref === null ? [] : [{ ref, note: `resource in shard ${shard}: applied there as a snapshot` }],
		),
	);
	each(markFailed, plan.failed);
	const keys = plan.rows.map(({ provider, type, wallet, id }) => ({ provider, type, wallet, id }));
	for (const chunk of jsonChunks(keys)) {
		s.push(claimEffectsOf(db, chunk, nowMs + EFFECT_CLAIM_MS, nowMs));
	}
	return s;
}

export async function consumeEvents(batch: MessageBatch<QueueMessage>, env: Env): Promise<void> {
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

	let shards: Shards;
	try {
		shards = getShards(env);
	} catch (err) {
		if (!(err instanceof ConfigError)) throw err;
		// Without the shard list no row can be found or noted: everything waits for the fix. The rows
		// stay `enqueued`, so even messages that run out of retries are re-sent by the sweep then.
		log("error", "config_error", { variable: err.variable, messages: work.length });
		for (const m of work) m.retry({ delaySeconds: CONFIG_ERROR_RETRY_SECONDS });
		return;
	}
	// A reordered or grown DB_SHARDS would apply states where their histories are not (src/db/shards.ts):
	// nothing is applied until the list is put back.
	let holds: boolean;
	try {
		holds = await layoutHolds(shards, nowMs);
	} catch (err) {
		log("error", "batch_apply_failed", { messages: work.length, error: errorMessage(err) });
		for (const m of work) m.retry({ delaySeconds: retryDelaySeconds(m.attempts) });
		return;
	}
	if (!holds) {
		// Our configuration's fault, so nothing may end `failed`: pointers are acked and their rows stay
		// `enqueued` for the sweep, which re-sends them once the list is put back; snapshots, which
		// have no row, wait in the queue with the longest delay (as for any configuration error).
		log("error", "shard_layout_changed", { messages: work.length });
		for (const m of work) {
			if (m.body.kind === "delivery") m.ack();
			else m.retry({ delaySeconds: CONFIG_ERROR_RETRY_SECONDS });
		}
		return;
	}
	// A pointer names its row's shard in its id; a snapshot goes to its resource's shard.
	const byShard = new Map<Shard, ShardWork[]>();
	for (const m of work) {
		let entry: ShardWork;
		if (m.body.kind === "delivery") {
			const at = locate(shards, m.body.deliveryId);
			if (!at) {
				// A shard removed from DB_SHARDS while its pointers were queued: ours to put back.
				log("error", "pointer_to_unknown_shard", { deliveryId: m.body.deliveryId });
				m.retry({ delaySeconds: CONFIG_ERROR_RETRY_SECONDS });
				continue;
			}
			entry = { message: m, rowId: at.id, shard: at.shard };
		} else {
			const r = m.body.resource;
			const shard = shardOfResource(shards, {
				provider: m.body.provider,
				type: r.type,
				wallet: r.wallet ?? "",
				id: r.id,
			});
			entry = { message: m, rowId: null, shard };
		}
		const list = byShard.get(entry.shard) ?? [];
		list.push(entry);
		byShard.set(entry.shard, list);
	}

	let config: Config;
	try {
		config = getConfig(env);
	} catch (err) {
		if (!(err instanceof ConfigError)) throw err;
		await Promise.all([...byShard].map(([shard, items]) => holdForConfiguration(shard.db, items, err)));
		return;
	}
	// One apply batch per shard, the shards in parallel (docs/design.md, storage at scale).
	await Promise.all([...byShard].map(([shard, items]) => applyInShard(env, config, shards, shard, items, nowMs)));
}

/** A message of the batch, with the shard it applies in and its row's id there (null for a snapshot). */
interface ShardWork {
	message: Message<QueueMessage>;
	rowId: number | null;
	shard: Shard;
}

async function applyInShard(
	env: Env,
	config: Config,
	shards: Shards,
	shard: Shard,
	items: readonly ShardWork[],
	nowMs: number,
): Promise<void> {
	const db = shard.db;
	// Snapshots go with the first chunk; pointers follow the id order their rows are loaded in.
	let first = true;
	let remaining = items.filter((w) => w.rowId !== null);
	const snapshots = items.filter((w) => w.rowId === null);
	const rowId = (w: ShardWork) => w.rowId ?? 0;
	while (first || remaining.length > 0) {
		const ids = remaining.map(rowId);
		let chunk: ShardWork[];
		let claimed: ClaimedEffectRow[];
		try {
			const stored = new Map<number, StoredDelivery>();
			if (ids.length > 0) {
				const results = await loadDeliveryChunk(db, JSON.stringify(ids), MAX_CHUNK_BODY_BYTES);
				// A replayed delivery whose body moved to the archive is read back from it; body_bytes
				// still bounds the chunk (src/db/archive.ts).
				await Promise.all(
					results.map(async (r) => {
						if (r.raw_body === null) r.raw_body = await storedBody(env.ARCHIVE, r);
					}),
				);
				for (const r of results) stored.set(r.id, r);
			}
			// Every pointer up to the last loaded id is in this chunk (missing ones: pruned rows).
			const lastId = stored.size === 0 ? Number.POSITIVE_INFINITY : Math.max(...stored.keys());
			chunk = [...(first ? snapshots : []), ...remaining.filter((w) => rowId(w) <= lastId)];
			// Old events of a sender with an API are checked against it first (docs/providers.md 1.6): fresher
			// snapshots join the same apply batch, after the payloads.
			const fresh = await freshSnapshots(env, stored.values(), config, nowMs);
			const bodies = chunk.map((w) =>
				w.message.body.kind === "delivery" ? { ...w.message.body, deliveryId: rowId(w) } : w.message.body,
			);
			const plan = planBatch([...bodies, ...fresh], stored, config, (provider, r) => {
				const home = shardOfResource(shards, { provider, type: r.type, wallet: r.wallet ?? "", id: r.id });
				return home === shard ? null : home.index;
			});
			// Sent before the batch marks the rows: a crash in between re-sends them, harmlessly (the
			// upsert is monotonic and effects fire once per resource, in that shard).
			if (plan.elsewhere.length > 0) await moveToTheirShards(env, shard, plan);
			const statements = planStatements(db, plan, nowMs);
			const results = statements.length > 0 ? await db.batch<ClaimedEffectRow>(statements) : [];
			// Only the claim statements return rows.
			claimed = results.flatMap((r) => r.results ?? []);
			remaining = remaining.filter((w) => rowId(w) > lastId);
			first = false;
			log("info", "batch_applied", {
				shard: shard.index,
				messages: chunk.length,
				applied: plan.rows.length,
				ignored: plan.ignored.length,
				failed: plan.failed.length,
				effects: claimed.length,
			});
		} catch (err) {
			const error = errorMessage(err);
			const unapplied = [...(first ? snapshots : []), ...remaining];
			log("error", "batch_apply_failed", { shard: shard.index, messages: unapplied.length, error });
			for (const w of unapplied) w.message.retry({ delaySeconds: retryDelaySeconds(w.message.attempts) });
			await recordTransientError(db, unapplied, error);
			return;
		}
		for (const w of chunk) w.message.ack();

		try {
			await executeEffects(env, config, shard, claimed, nowMs);
		} catch (err) {
			// Committed state; the effects stay pending and the sweep runs them once the claim lapses.
			log("error", "effects_execution_failed", { effects: claimed.length, error: errorMessage(err) });
		}
	}
}

/**
 * States whose resource lives in another shard go there as snapshots, each naming the delivery it
 * came from, so a snapshot that dead-letters marks that delivery `failed`. One too large for a
 * queue message cannot move: its delivery is `failed` here (visible, replayable), never applied here.
 */
async function moveToTheirShards(env: Env, shard: Shard, plan: ApplyPlan): Promise<void> {
	const bodies = plan.elsewhere.map(
		({ ref, provider, resource }): SnapshotMessage => ({
			kind: "snapshot",
			provider,
			resource,
			runId: null,
			...(ref === null ? {} : { origin: globalId(shard.index, ref) }),
		}),
	);
	const { tooLarge } = await sendSnapshotMessages(env.EVENTS, bodies);
	for (const m of tooLarge) {
		const i = bodies.indexOf(m);
		const ref = plan.elsewhere[i]?.ref ?? null;
		log("error", "state_too_large_to_move", { shard: shard.index, id: m.resource.id });
		if (ref !== null)
			plan.failed.push({
				ref,
				error: "its resource lives in another shard and its state is too large for a queue message",
			});
	}
	plan.elsewhere = plan.elsewhere.filter((_, i) => !tooLarge.includes(bodies[i] as SnapshotMessage));
}

/**
 * The configuration the consumer reads (no webhook secret is in it) does not parse. Dead-lettering
 * would turn our typo into failed deliveries, so nothing is retried into the DLQ: pointers are
 * acked and their rows stay `enqueued` with the error noted, for the sweep to re-send once the
 * configuration is fixed (it sends nothing while it is broken, and alerts); snapshots, which have
 * no row, are retried with the longest delay (docs/design.md, configuration).
 */
export const CONFIG_ERROR_RETRY_SECONDS = 3_600;

async function holdForConfiguration(db: D1Database, work: readonly ShardWork[], err: ConfigError) {
	log("error", "config_error", { variable: err.variable, messages: work.length });
	const error = `configuration error: ${err.variable}`;
	try {
		await recordTransientError(db, work, error);
	} finally {
		for (const { message } of work) {
			if (message.body.kind === "delivery") message.ack();
			else message.retry({ delaySeconds: CONFIG_ERROR_RETRY_SECONDS });
		}
	}
}

/** Best effort, off the success path: keep the last error visible on the rows being retried. */
async function recordTransientError(db: D1Database, work: readonly ShardWork[], error: string) {
	const ids = work.flatMap((w) => (w.rowId === null ? [] : [w.rowId]));
	if (ids.length === 0) return;
	try {
		await noteLastError(db, JSON.stringify(ids), error);
	} catch {
		// D1 is what failed; the error is in the log line above.
	}
}

/**
 * The dead-letter consumer: a delivery whose retries are exhausted becomes `failed`, visible
 * and replayable. A dead-lettered reconcile snapshot fails its window and run, so the watermark
 * stays before it and the next reconciliation lists the order again (src/reconcile/dead-letters.ts).
 */
/**
 * The dead-letter queue's max_retries (wrangler.toml): past it a retried message is gone. A test
 * (test/wiring/names.test.ts) fails when the two differ.
 */
export const MOVED_STATE_LAST_ATTEMPT = 10;

export async function consumeDeadLetters(batch: MessageBatch<QueueMessage>, env: Env): Promise<void> {
	const nowMs = Date.now();
	const ids: number[] = [];
	const moved: number[] = [];
	const snapshots: FailedWork[] = [];
	for (const m of batch.messages) {
		const body = m.body as Partial<QueueMessage> | null;
		if (body?.kind === "delivery" && typeof body.deliveryId === "number") ids.push(body.deliveryId);
		else if (body?.kind === "snapshot" && typeof body.origin === "number") moved.push(body.origin);
		else if (body?.kind === "snapshot" && typeof body.runId === "string" && body.resource) {
			snapshots.push({
				runId: body.runId,
				wallet: body.window?.wallet ?? body.resource.wallet,
				idx: body.window?.idx ?? null,
				error: `snapshot ${body.resource.id} dead-lettered`,
			});
		} else log("error", "dead_lettered_message", { kind: body?.kind ?? null, id: m.id });
	}
	// Reconcile work first: it lives in the home shard and needs no DB_SHARDS.
	await failReconcileWork(env.DB, snapshots, nowMs);
	// Without a shard list that parses and matches its recorded layout, no row can be found safely:
	// pointers are acked (their rows stay `enqueued`, re-sent by the sweep once the list is fixed);
	// moved states are retried, since their rows are `ignored` and nothing else would re-send them.
	let shards: Shards | null = null;
	try {
		shards = getShards(env);
		if (!(await layoutHolds(shards, nowMs))) shards = null;
	} catch (err) {
		if (!(err instanceof ConfigError)) throw err;
	}
	if (shards === null) {
		log("error", "dead_letters_held", { pointers: ids.length, movedStates: moved.length });
		for (const m of batch.messages) {
			const body = m.body as Partial<QueueMessage> | null;
			if (body?.kind === "snapshot" && typeof body.origin === "number") {
				if (m.attempts >= MOVED_STATE_LAST_ATTEMPT) log("error", "moved_state_dropped", { origin: body.origin });
				m.retry({ delaySeconds: CONFIG_ERROR_RETRY_SECONDS });
			} else m.ack();
		}
		return;
	}
	if (ids.length > 0) {
		const { groups, unplaced } = groupByShard(shards, ids, (id) => id);
		await Promise.all(
			[...groups].map(([shard, rows]) =>
				markDeadLettered(
					shard.db,
					rows.map((r) => r.id),
					nowMs,
				),
			),
		);
		if (unplaced.length > 0) log("error", "pointer_to_unknown_shard", { deliveryIds: unplaced });
		log("error", "deliveries_dead_lettered", { count: ids.length - unplaced.length });
	}
	if (moved.length > 0) {
		// A state moved to its resource's shard that could not be applied there: its delivery was
		// settled `ignored` with a note saying it was; now `failed`, visible and replayable.
		const { groups } = groupByShard(shards, moved, (id) => id);
		const error = "its state, moved to its resource's shard, dead-lettered there";
		await Promise.all(
			[...groups].map(([shard, rows]) =>
				markFailed(shard.db, JSON.stringify(rows.map((r) => ({ ref: r.id, error }))), nowMs).run(),
			),
		);
		log("error", "moved_states_dead_lettered", { count: moved.length });
	}
	batch.ackAll();
}
