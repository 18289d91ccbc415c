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
	{
		reason: "not_configured" | "invalid_id" | "no_account" | "not_found" | "unavailable" | "not_the_resource";
		message: string;
	}
>;

/**
 * The account to call for a resource of `wallet`: the wallet itself, or, for a sender whose
 * resources carry none (not `accountScoped`), its only listed account. Null when it cannot be
 * known: an account-scoped resource stored with no wallet (asking a guessed account would key the
 * answer apart, a second resource), or several accounts listed. The caller must then name one.
 */
export function accountFor(config: ReconcileConfig, wallet: string | null): string | null {
	if (wallet !== null) return wallet;
	if (config.api.accountScoped || config.wallets.length !== 1) return null;
	return config.wallets[0] ?? null;
}

/**
 * Whether an answer is the resource asked for: same type and id, and keyed as the sender's
 * webhooks key it: the asked account as its wallet when `accountScoped`, else no wallet
 * (src/providers/types.ts ProviderApi.snapshot).
 */
export function isAsked(config: ReconcileConfig, s: ResourceSnapshot, account: string, id?: string): boolean {
	const keyed = config.api.accountScoped ? s.wallet === account : s.wallet === null;
	return s.type === config.api.type && keyed && (id === undefined || s.id === id);
}

/**
 * Not empty, `.` or `..` (a URL resolves those even encoded), at most 200 characters as a sender's
 * ids are (src/providers/types.ts idString); anything else is the API's `encodeURIComponent`'s.
 */
function isPathSegment(value: string): boolean {
	return value !== "." && value !== ".." && value.length > 0 && value.length <= 200;
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
	// Both become path segments of a signed request: nothing a URL would resolve away.
	if (!isPathSegment(id) || (wallet !== null && !isPathSegment(wallet)))
		return { ok: false, reason: "invalid_id", message: "the id and wallet must be non-empty path segments" };
	const account = accountFor(parsed.config, wallet);
	if (account === null)
		return {
			ok: false,
			reason: "no_account",
			message: `the stored ${parsed.config.api.type} names no wallet: name it with ?wallet=`,
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
