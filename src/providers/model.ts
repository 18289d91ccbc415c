/**
 * What a sender's event becomes once parsed: the data every layer shares (ingress, queue
 * messages, apply, effects). A leaf module: it imports nothing, so anything may import it.
 */

/** The senders this receiver knows; each is one file in src/providers/ listed in its index. */
export type ProviderName = "bloobank" | "bold" | "pazy" | "standard";
export const PROVIDER_NAMES: readonly ProviderName[] = ["bloobank", "bold", "pazy", "standard"];

/** A resource snapshot as the sender last described it. */
export interface ResourceSnapshot {
	type: string;
	id: string;
	/**
	 * The scope within which `id` is unique, where the sender has one (BlooBank: the wallet,
	 * docs/providers.md 1.4); null elsewhere. Part of the resource's key.
	 */
	wallet: string | null;
	/** Orders snapshots of one resource: higher wins (BlooBank: ordVersion). */
	version: number;
	status: string;
	data: unknown;
}

export interface NormalisedEvent {
	provider: ProviderName;
	/** The sender's dedupe id (BlooBank messageId). Used for dedupe only, never as a business id. */
	messageId: string;
	event: string;
	/** The sender's attempt counter, for audit. */
	attempt: number | null;
	/** The sender's attempt id, where it has one (Bold `attemptId`), for audit. */
	attemptRef: string | null;
	/**
	 * When the sender says the event happened (epoch ms), where the payload has such a time; null
	 * otherwise. Only for the console's end-to-end lag (event time to processed): never for ordering.
	 */
	eventAt: number | null;
	/** null: an event we do not model; stored, marked `ignored` (with `note`), answered 2xx. */
	resource: ResourceSnapshot | null;
	note: string | null;
}
