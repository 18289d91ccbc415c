/**
 * What a sender's event becomes once parsed: the data every layer shares (ingress, queue
 * messages, apply, effects). A leaf module: it imports nothing, so anything may import it.
 */

/**
 * The senders this receiver knows, each with the variables it reads. This file names none: each
 * provider file adds its own entry by declaration merging, e.g.
 * `declare module "./model" { interface ProviderVariables { <name>: "<NAME>_WEBHOOK_SECRETS" } }`,
 * and src/providers/index.ts lists the providers themselves (its type requires one per entry).
 * `Env` (src/bindings.ts) derives the senders' variables from it.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by the provider files (declaration merging).
export interface ProviderVariables {}
export type ProviderName = keyof ProviderVariables & string;
/** Every variable some provider reads (its secrets and its own settings). */
export type ProviderVariable = ProviderVariables[ProviderName];

/** A resource snapshot as the sender last described it. */
export interface ResourceSnapshot {
	type: string;
	id: string;
	/**
	 * The scope within which `id` is unique, where the sender has one (docs/providers.md 1.4: a
	 * wallet); null elsewhere. Part of the resource's key.
	 */
	wallet: string | null;
	/** Orders snapshots of one resource: higher wins (docs/providers.md 1.4: an order's ordVersion). */
	version: number;
	status: string;
	data: unknown;
}

export interface NormalisedEvent {
	provider: ProviderName;
	/** The sender's dedupe id (docs/providers.md 6). Used for dedupe only, never as a business id. */
	messageId: string;
	event: string;
	/** The sender's attempt counter, for audit. */
	attempt: number | null;
	/** The sender's attempt id, where it has one (docs/providers.md 2), for audit. */
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
