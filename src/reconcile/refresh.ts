/**
 * "GET the resource fresh when a long delay elapsed" (BlooBank's best practices, docs/providers.md
 * 1.6): one order fetched from the provider's API (signed, 3 s timeout) and fed through the one
 * writer as a snapshot message, as reconciliation does (docs/design.md invariant 7). Used by the
 * admin API and the console ("Check with BlooBank"), and by the consumer for old events.
 */
import { type Config, type Env, parseReconcileConfig } from "../env";
import { storedHeaders } from "../providers";
import { type BlooBankSettings, blooBankOrderSnapshot, parseBlooBank } from "../providers/bloobank";
import type { ResourceSnapshot } from "../providers/model";
import type { SnapshotMessage } from "../queue/messages";
import type { Result } from "../result";
import { BlooBankClient, type ClientDeps, defaultDeps } from "./client";

export type FetchResult = Result<
	{ snapshot: ResourceSnapshot },
	{ reason: "not_configured" | "not_found" | "unavailable" | "not_an_order"; message: string }
>;

/** The order as BlooBank holds it now, or why not. Makes one signed request (retried inside). */
export async function fetchOrder(
	env: Env,
	wallet: string,
	id: string,
	deps: ClientDeps = defaultDeps(),
): Promise<FetchResult> {
	const parsed = parseReconcileConfig(env);
	if (!parsed.ok) return { ok: false, reason: "not_configured", message: parsed.error };
	const res = await new BlooBankClient(parsed.config, deps).getPaymentOrder(wallet, id);
	if (!res.ok) {
		const e = res.error;
		if (e.kind === "rejected" && e.httpStatus === 404) return { ok: false, reason: "not_found", message: e.message };
		return { ok: false, reason: "unavailable", message: `${e.kind}: ${e.message}` };
	}
	const snapshot = blooBankOrderSnapshot(res.value, wallet);
	if (!snapshot || snapshot.wallet !== wallet || snapshot.id !== id)
		return { ok: false, reason: "not_an_order", message: "the answer is not this payment order" };
	return { ok: true, snapshot };
}

/** Fetches the order and queues it for the one writer; the answer says what was queued. */
export async function refreshOrder(
	env: Env,
	wallet: string,
	id: string,
	deps: ClientDeps = defaultDeps(),
): Promise<FetchResult> {
	const fetched = await fetchOrder(env, wallet, id, deps);
	if (fetched.ok) {
		const message: SnapshotMessage = {
			kind: "snapshot",
			provider: "bloobank",
			resource: fetched.snapshot,
			runId: null,
		};
		await env.EVENTS.send(message);
	}
	return fetched;
}

/** At most this many orders fetched fresh per consumer chunk (each a signed call of <= 3 s). */
export const MAX_FRESH_FETCHES = 10;

export interface OldOrder {
	wallet: string;
	id: string;
	version: number;
}

/**
 * BlooBank's best practices: when a long delay elapsed between an event and its processing, GET
 * the resource fresh. For the chunk's old BlooBank orders (at most MAX_FRESH_FETCHES, in
 * parallel), the order as BlooBank holds it now, as snapshot messages for the same apply batch:
 * the payload is still applied and marked against what state then holds, so a fresher snapshot
 * makes it `stale`, never `processed` for content it did not carry. Without credentials nothing
 * is parsed or fetched; when the API does not answer, nothing is added: the payload alone applies.
 */
export async function freshSnapshots(
	env: Env,
	stored: Iterable<{ provider: string; raw_body: string | null; headers: string | null }>,
	config: Config,
	nowMs: number,
	deps: ClientDeps = defaultDeps(),
): Promise<SnapshotMessage[]> {
	if (!parseReconcileConfig(env).ok) return [];
	const old = oldOrders(stored, config, nowMs);
	if (old.length === 0) return [];
	const fetched = await Promise.all(
		old.slice(0, MAX_FRESH_FETCHES).map((o) => fetchOrder(env, o.wallet, o.id, deps).catch(() => null)),
	);
	const out: SnapshotMessage[] = [];
	for (const [i, f] of fetched.entries()) {
		const o = old[i];
		if (f?.ok && o && f.snapshot.version >= o.version)
			out.push({ kind: "snapshot", provider: "bloobank", resource: f.snapshot, runId: null });
	}
	return out;
}

/** The stored BlooBank deliveries of a chunk whose event is older than BLOOBANK_REFRESH_AFTER_SECONDS. */
export function oldOrders(
	stored: Iterable<{ provider: string; raw_body: string | null; headers: string | null }>,
	config: Config,
	nowMs: number,
): OldOrder[] {
	const settings = config.providerSettings.bloobank as BlooBankSettings | undefined;
	if (!settings) return [];
	const old: OldOrder[] = [];
	for (const d of stored) {
		if (d.provider !== "bloobank" || d.raw_body === null) continue;
		const parsed = parseBlooBank(d.raw_body, storedHeaders(d.headers));
		if (!parsed.ok) continue;
		const { resource, eventAt } = parsed.event;
		if (resource?.wallet && eventAt !== null && nowMs - eventAt > settings.refreshAfterSeconds * 1000)
			old.push({ wallet: resource.wallet, id: resource.id, version: resource.version });
	}
	return old;
}
