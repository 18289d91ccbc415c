/**
 * "GET the resource fresh when a long delay elapsed" (BlooBank's best practices, docs/providers.md
 * 1.6): one order fetched from the provider's API (signed, 3 s timeout) and fed through the one
 * writer as a snapshot message, as reconciliation does (docs/design.md invariant 7). Used by the
 * admin API and the console ("Check with BlooBank"), and by the consumer for old events.
 */
import { type Env, parseReconcileConfig } from "../env";
import { blooBankOrderSnapshot } from "../providers/bloobank";
import type { ResourceSnapshot } from "../providers/model";
import type { SnapshotMessage } from "../queue/messages";
import { BlooBankClient, type ClientDeps, defaultDeps } from "./client";

export type FetchResult =
	| { ok: true; snapshot: ResourceSnapshot }
	| { ok: false; reason: "not_configured" | "not_found" | "unavailable" | "not_an_order"; message: string };

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
