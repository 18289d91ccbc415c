/** Reads behind the admin API: the SQL and the JSON shapes docs/design.md fixes. */

import { storedBody } from "../db/archive";
import { type DeliveryListRow, type DeliveryStatus, deliveryPage, deliveryRow } from "../db/deliveries";
import { type EffectStatus, effectPage } from "../db/effects";
import { rejectionPage } from "../db/rejections";
import { findResources, type ResourceItemRow } from "../db/resources";
import { fanOut, globalId, newestInShards, type Shards, shardOfResource } from "../db/shards";
import { iso } from "../time";
import { type Page, page, shardedPage } from "./pagination";

function deliveryItem(r: DeliveryListRow) {
	return {
		provider: r.provider,
		messageId: r.message_id,
		event: r.event,
		status: r.status,
		receivedAt: iso(r.received_at),
		attempts: r.attempts,
		duplicates: r.duplicates,
		lastError: r.last_error,
	};
}

export interface DeliveryFilter {
	provider?: string;
	status?: DeliveryStatus;
	event?: string;
}

/** Newest first across shards (`bounds`: parseShardCursor). */
export function listDeliveries(
	shards: Shards,
	f: DeliveryFilter,
	bounds: readonly number[],
	limit: number,
): Promise<Page<unknown>> {
	const selection = { provider: f.provider ?? null, status: f.status ?? null, event: f.event ?? null };
	return shardedPage(
		shards,
		bounds,
		limit,
		(db, below, take) => deliveryPage(db, selection, below, take),
		{ id: (r) => r.id, key: (r) => r.received_at },
		deliveryItem,
	);
}

/** The delivery of a message id, from whichever shard holds it (src/db/shards.ts newestInShards). */
export function findDeliveryRow(shards: Shards, provider: string, messageId: string) {
	return newestInShards(shards, (db) => deliveryRow(db, provider, messageId));
}

export async function getDelivery(shards: Shards, archive: R2Bucket | undefined, provider: string, messageId: string) {
	const r = await findDeliveryRow(shards, provider, messageId);
	if (!r) return null;
	return {
		...deliveryItem(r),
		rawBody: await storedBody(archive, r),
		archivedAt: iso(r.archived_at),
		bodyBytes: r.body_bytes,
		providerAttempt: r.provider_attempt,
		attemptId: r.attempt_ref,
		resource: r.resource_type ? { type: r.resource_type, id: r.resource_id, version: r.resource_version } : null,
		statusAt: iso(r.status_at),
		processedAt: iso(r.processed_at),
		lastDuplicateAt: iso(r.last_duplicate_at),
		note: r.note,
		// Where it lives (src/db/shards.ts): a replay replays this row, not another shard's.
		shard: r.shard,
	};
}

export async function listRejections(db: D1Database, below: number, limit: number): Promise<Page<unknown>> {
	return page(
		await rejectionPage(db, below, limit + 1),
		limit,
		(r) => r.seq,
		({ seq: _seq, at, ...rest }) => ({ ...rest, at: iso(at) }),
	);
}

export type ResourceLookup =
	| { found: "one"; resource: ReturnType<typeof resourceItem> }
	| { found: "ambiguous"; wallets: string[] }
	| { found: "none" };

function resourceItem(r: ResourceItemRow) {
	return {
		provider: r.provider,
		type: r.type,
		id: r.id,
		// An id may be unique only within its wallet (docs/providers.md 1.4).
		wallet: r.wallet === "" ? null : r.wallet,
		status: r.status,
		version: r.version,
		data: JSON.parse(r.data) as unknown,
		updatedAt: iso(r.updated_at),
		source: r.source,
	};
}

/** With `wallet`, that wallet's resource; without, the one resource of that id or the wallets holding it. */
export async function getResource(
	shards: Shards,
	provider: string,
	type: string,
	id: string,
	wallet: string | null,
): Promise<ResourceLookup> {
	// With its wallet the key is whole and names one shard; without, the wallets are what is asked.
	const results =
		wallet === null
			? (await fanOut(shards, (s) => findResources(s.db, provider, type, id, null)))
					.flat()
					.sort((a, b) => (a.wallet < b.wallet ? -1 : a.wallet > b.wallet ? 1 : 0))
			: await findResources(shardOfResource(shards, { provider, type, wallet, id }).db, provider, type, id, wallet);
	const [first] = results;
	if (!first) return { found: "none" };
	if (results.length > 1) return { found: "ambiguous", wallets: results.map((r) => r.wallet) };
	return { found: "one", resource: resourceItem(first) };
}

/** Effect status filter: `pending` (including ones retrying after a failed attempt), `done`, or `failed` (given up after EFFECT_MAX_ATTEMPTS). */
export function listEffects(
	shards: Shards,
	status: EffectStatus | undefined,
	bounds: readonly number[],
	limit: number,
): Promise<Page<unknown>> {
	return shardedPage(
		shards,
		bounds,
		limit,
		(db, below, take) => effectPage(db, status ?? null, below, take),
		{ id: (r) => r.id, key: (r) => r.created_at },
		(r, shard) => ({
			// Names its shard: `POST /admin/effects/:id/retry` takes it as shown (src/db/shards.ts).
			id: globalId(shard.index, r.id),
			provider: r.provider,
			resource: { type: r.resource_type, id: r.resource_id },
			kind: r.kind,
			status: r.status,
			attempts: r.attempts,
			lastError: r.last_error,
			createdAt: iso(r.created_at),
			doneAt: iso(r.done_at),
		}),
	);
}
