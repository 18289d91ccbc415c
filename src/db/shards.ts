/**
 * Database shards (docs/design.md, storage at scale). `DB_SHARDS` lists D1 bindings; the first
 * is the home shard. A delivery, its resource and its effects live in the shard chosen by a
 * stable hash of (provider, resource key), so one resource's history, ordering and effect
 * dedupe stay inside one database and every apply batch is one D1 batch per shard. Tables that
 * are not per resource (rejections, alert states, reconcile runs, heartbeats) live in the home
 * shard. Every shard carries the whole schema (the same migrations), so a shard is an ordinary
 * database.
 *
 * Row ids are per database, so ids that leave a shard (queue pointers, effect ids in the admin
 * API, list cursors) carry the shard: `shard * SHARD_ID_SPAN + id`. The home shard's ids are
 * unchanged, so with one shard nothing is different from an unsharded database.
 *
 * The placement is by position in DB_SHARDS: reordering the list, or adding a shard once data
 * exists, would put a resource's next delivery where its history is not (and fire its effects
 * again). The layout check (layoutMismatch, layoutHolds) refuses that instead.
 */

export interface Shard {
	/** Position in DB_SHARDS; 0 is the home shard. */
	index: number;
	db: D1Database;
}

export interface Shards {
	readonly all: readonly Shard[];
	/** The binding names as listed (DB_SHARDS): what the layout check is cached under. */
	readonly key: string;
	/** Shard 0: also holds the tables that are not per resource. */
	readonly home: Shard;
}

/** Room for 2^40 (about 10^12) rows per shard and 8,192 shards below Number.MAX_SAFE_INTEGER. */
export const SHARD_ID_SPAN = 2 ** 40;
export const MAX_SHARDS = 8_192;

export function shardsFrom(dbs: readonly D1Database[], key = `${dbs.length} shards`): Shards {
	const all = dbs.map((db, index) => ({ index, db }));
	const home = all[0];
	if (!home) throw new Error("at least one shard");
	return { all, home, key };
}

/** An id that names its shard: the home shard's ids stay as they are. */
export function globalId(shard: number, id: number): number {
	return shard * SHARD_ID_SPAN + id;
}

/** The shard and the row id within it, or null for an id of a shard that is not configured. */
export function locate(shards: Shards, id: number): { shard: Shard; id: number } | null {
	if (!Number.isSafeInteger(id) || id < 0) return null;
	const shard = shards.all[Math.floor(id / SHARD_ID_SPAN)];
	return shard ? { shard, id: id % SHARD_ID_SPAN } : null;
}

/** Groups items by the shard their id names; ids of unconfigured shards go to `unplaced`. */
export function groupByShard<T>(
	shards: Shards,
	items: readonly T[],
	idOf: (item: T) => number,
): { groups: Map<Shard, { item: T; id: number }[]>; unplaced: T[] } {
	const groups = new Map<Shard, { item: T; id: number }[]>();
	const unplaced: T[] = [];
	for (const item of items) {
		const at = locate(shards, idOf(item));
		if (!at) {
			unplaced.push(item);
			continue;
		}
		const group = groups.get(at.shard) ?? [];
		group.push({ item, id: at.id });
		groups.set(at.shard, group);
	}
	return { groups, unplaced };
}

/**
 * The resource key the placement hashes. A sender's ids may be unique only within a wallet, so
 * the wallet is part of it (docs/providers.md 1.4); "" for senders without wallets.
 */
export interface ResourceKey {
	provider: string;
	type: string;
	wallet: string;
	id: string;
}

/** 32-bit FNV-1a over UTF-8: stable across runtimes and releases, which is all placement needs. */
export function fnv1a(text: string): number {
	let hash = 0x811c9dc5;
	for (const byte of new TextEncoder().encode(text)) {
		hash ^= byte;
		hash = Math.imul(hash, 0x01000193) >>> 0;
	}
	return hash;
}

/** The shard of a resource: its deliveries, its state row and its effects. */
export function shardOfResource(shards: Shards, key: ResourceKey): Shard {
	if (shards.all.length === 1) return shards.home;
	const index = fnv1a([key.provider, key.type, key.wallet, key.id].join("\u0000")) % shards.all.length;
	return shards.all[index] ?? shards.home;
}

/**
 * The shard of a delivery: its resource's; a delivery that names no resource (stored `ignored`)
 * by its message id, so its duplicates still find it. If a fixed parser later reads a resource
 * from a re-send of such a row, the re-send lands in the resource's shard as a new row and the
 * old row stays `ignored`: nothing is applied twice, since the old row was never applied.
 */
export function shardOfDelivery(
	shards: Shards,
	provider: string,
	messageId: string,
	resource: { type: string; wallet?: string | null; id: string } | null,
): Shard {
	if (resource)
		return shardOfResource(shards, { provider, type: resource.type, wallet: resource.wallet ?? "", id: resource.id });
	if (shards.all.length === 1) return shards.home;
	return shards.all[fnv1a(`${provider}\u0000${messageId}`) % shards.all.length] ?? shards.home;
}

/**
 * A row looked up by message id, which does not name its shard: every shard is asked, and when
 * two hold one (an `ignored` row placed by its message id, and the re-send a fixed parser placed
 * with its resource) the newer is the delivery. Returned with its shard's index.
 */
export async function newestInShards<R extends { received_at: number }>(
	shards: Shards,
	read: (db: D1Database) => Promise<R | null>,
): Promise<(R & { shard: number }) | null> {
	let newest: (R & { shard: number }) | null = null;
	const found = await fanOut(shards, async (s) => {
		const r = await read(s.db);
		return r && { ...r, shard: s.index };
	});
	for (const r of found) if (r !== null && (newest === null || r.received_at > newest.received_at)) newest = r;
	return newest;
}

/** Runs `read` on every shard at once; the results in shard order. */
export function fanOut<T>(shards: Shards, read: (shard: Shard) => Promise<T>): Promise<T[]> {
	return Promise.all(shards.all.map(read));
}

/**
 * The layout check: each shard records, once, its position and the shard count it was first
 * used with (a `heartbeats` row named "shard_layout"). A shard that finds another layout
 * recorded is a DB_SHARDS that was reordered or grown after data was placed: every delivery
 * would then be a 503 (docs/design.md, storage at scale) until the list is put back, instead of
 * a resource's history split across shards and its effects fired twice.
 * Returns the first shard whose recorded layout differs, or null.
 */
export async function layoutMismatch(shards: Shards, nowMs: number): Promise<Shard | null> {
	const count = shards.all.length;
	const found = await fanOut(shards, async (shard) => {
		const layout = JSON.stringify({ shard: shard.index, of: count });
		// A shard with no layout recorded is recorded, unless it already holds data and the list has
		// several shards: that data was placed by one database (a deployment from before the check)
		// or by a list nobody recorded, so nothing says it belongs here. A shard that holds no data
		// takes the current layout whatever it recorded: nothing in it can be misplaced.
		const [, row] = await shard.db.batch<{ detail: string }>([
			shard.db
				.prepare(
					`INSERT INTO heartbeats (name, at, detail) SELECT 'shard_layout', ?1, ?2
           WHERE ?3 = 1 OR NOT (EXISTS (SELECT 1 FROM resources) OR EXISTS (SELECT 1 FROM deliveries))
           ON CONFLICT (name) DO UPDATE SET at = excluded.at, detail = excluded.detail
           WHERE NOT EXISTS (SELECT 1 FROM resources) AND NOT EXISTS (SELECT 1 FROM deliveries)`,
				)
				.bind(nowMs, layout, count),
			shard.db.prepare("SELECT detail FROM heartbeats WHERE name = 'shard_layout'"),
		]);
		return row?.results[0]?.detail === layout ? null : shard;
	});
	return found.find((s) => s !== null) ?? null;
}

/** Shard lists whose layout this isolate has verified: the check costs one round trip per isolate. */
const verifiedLayouts = new Set<string>();

/**
 * The check as the webhook path, the consumer and reconciliation run it: once per isolate and
 * shard list, one shard included (a list shrunk back to `DB` must be refused too). A mismatch is
 * never cached, so it is seen again on the next call.
 */
export async function layoutHolds(shards: Shards, nowMs: number): Promise<boolean> {
	if (verifiedLayouts.has(shards.key)) return true;
	if ((await layoutMismatch(shards, nowMs)) !== null) return false;
	verifiedLayouts.add(shards.key);
	return true;
}
