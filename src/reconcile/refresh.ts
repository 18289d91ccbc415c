/**
 * "GET the resource fresh when a long delay elapsed" (docs/providers.md 1.6): one resource fetched
 * from the reconciled sender's API (its `api`, src/providers/types.ts; signed, 3 s timeout) and
 * fed through the one writer as a snapshot message, as reconciliation does (docs/design.md
 * invariant 7). Used by the admin API and the console (the check button), and by the consumer
 * for old events.
 */
import { type Config, type Env, parseReconcileConfig, type ReconcileConfig } from "../env";
import { storedHeaders } from "../providers";
import type { ResourceSnapshot } from "../providers/model";
import type { SnapshotMessage } from "../queue/messages";
import type { Result } from "../result";
import { ApiClient, type ClientDeps, defaultDeps } from "./client";

export type FetchResult = Result<
	{ snapshot: ResourceSnapshot; account: string },
	{ reason: "not_configured" | "no_account" | "not_found" | "unavailable" | "not_the_resource"; message: string }
>;

/**
 * The account to call for a resource of `wallet`: the wallet itself, or, for a sender whose
 * resources carry none (its ids are unique across accounts), its only listed account; null when
 * it lists several (then the caller must name one).
 */
export function accountFor(config: ReconcileConfig, wallet: string | null): string | null {
	return wallet ?? (config.wallets.length === 1 ? (config.wallets[0] ?? null) : null);
}

/**
 * Whether an answer is the resource asked for: same type and id, and the same wallet or none (a
 * sender without wallets keys it as its webhooks do, src/providers/types.ts ProviderApi.snapshot).
 */
export function isAsked(config: ReconcileConfig, s: ResourceSnapshot, account: string, id?: string): boolean {
	return s.type === config.api.type && (s.wallet === null || s.wallet === account) && (id === undefined || s.id === id);
}

/** The resource as the sender holds it now, or why not. Makes one signed request (retried inside). */
async function fetchWith(config: ReconcileConfig, account: string, id: string, deps: ClientDeps): Promise<FetchResult> {
	const res = await new ApiClient(config, deps).getOne(account, id);
	if (!res.ok) {
		const e = res.error;
		if (e.kind === "rejected" && e.httpStatus === 404) return { ok: false, reason: "not_found", message: e.message };
		return { ok: false, reason: "unavailable", message: `${e.kind}: ${e.message}` };
	}
	const snapshot = config.api.snapshot(res.value, account);
	if (!snapshot || !isAsked(config, snapshot, account, id))
		return { ok: false, reason: "not_the_resource", message: `the answer is not this ${config.api.type}` };
	return { ok: true, snapshot, account };
}

/**
 * Fetches the resource and queues it for the one writer; the answer says what was queued. `wallet`
 * null: a resource that names none, asked of the sender's only account.
 */
export async function refreshResource(
	env: Env,
	wallet: string | null,
	id: string,
	deps: ClientDeps = defaultDeps(),
): Promise<FetchResult> {
	const parsed = parseReconcileConfig(env);
	if (!parsed.ok) return { ok: false, reason: "not_configured", message: parsed.error };
	const account = accountFor(parsed.config, wallet);
	if (account === null)
		return {
			ok: false,
			reason: "no_account",
			message: `it names no wallet and ${parsed.config.api.accountsVariable} lists several: name one with ?wallet=`,
		};
	const fetched = await fetchWith(parsed.config, account, id, deps);
	if (fetched.ok) {
		const message: SnapshotMessage = {
			kind: "snapshot",
			provider: parsed.config.provider.name,
			resource: fetched.snapshot,
			runId: null,
		};
		await env.EVENTS.send(message);
	}
	return fetched;
}

/** At most this many resources fetched fresh per consumer chunk (each a signed call of <= 3 s). */
export const MAX_FRESH_FETCHES = 10;

export interface OldResource {
	/** The account to ask (its wallet, or the sender's only account: accountFor). */
	account: string;
	id: string;
	version: number;
}

type Stored = { provider: string; raw_body: string | null; headers: string | null };

/**
 * The sender's best practices: when a long delay elapsed between an event and its processing, GET
 * the resource fresh (docs/providers.md 1.6). For the chunk's old events of the reconciled sender
 * (at most MAX_FRESH_FETCHES, in parallel), the resource as the sender holds it now, as snapshot
 * messages for the same apply batch: the payload is still applied and marked against what state
 * then holds, so a fresher snapshot makes it `stale`, never `processed` for content it did not
 * carry. Without credentials nothing is parsed or fetched; when the API does not answer, nothing
 * is added: the payload alone applies.
 */
export async function freshSnapshots(
	env: Env,
	stored: Iterable<Stored>,
	config: Config,
	nowMs: number,
	deps: ClientDeps = defaultDeps(),
): Promise<SnapshotMessage[]> {
	const parsed = parseReconcileConfig(env);
	if (!parsed.ok) return [];
	const old = oldResources(stored, parsed.config, config, nowMs);
	if (old.length === 0) return [];
	const fetched = await Promise.all(
		old.slice(0, MAX_FRESH_FETCHES).map((o) => fetchWith(parsed.config, o.account, o.id, deps).catch(() => null)),
	);
	const out: SnapshotMessage[] = [];
	const provider = parsed.config.provider.name;
	for (const [i, f] of fetched.entries()) {
		const o = old[i];
		if (f?.ok && o && f.snapshot.version >= o.version)
			out.push({ kind: "snapshot", provider, resource: f.snapshot, runId: null });
	}
	return out;
}

/** The stored deliveries of a chunk, of the reconciled sender and its API's type, older than its refresh age. */
export function oldResources(
	stored: Iterable<Stored>,
	reconcile: ReconcileConfig,
	config: Config,
	nowMs: number,
): OldResource[] {
	const { provider, api } = reconcile;
	const settings = config.providerSettings[provider.name];
	const maxAgeMs = settings === undefined ? null : api.refreshAfterMs(settings);
	if (maxAgeMs === null) return [];
	const old: OldResource[] = [];
	for (const d of stored) {
		if (d.provider !== provider.name || d.raw_body === null) continue;
		const parsed = provider.parse(d.raw_body, storedHeaders(d.headers), settings);
		if (!parsed.ok) continue;
		const { resource, eventAt } = parsed.event;
		if (!resource || resource.type !== api.type || eventAt === null || nowMs - eventAt <= maxAgeMs) continue;
		const account = accountFor(reconcile, resource.wallet);
		if (account !== null) old.push({ account, id: resource.id, version: resource.version });
	}
	return old;
}
