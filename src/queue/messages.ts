/**
 * The only contract between producers and consumers of the EVENTS queue.
 * Messages are small pointers or snapshots: queue messages are capped at 128 KB, raw bodies
 * are up to MAX_BODY_BYTES, so a delivery's body stays in D1 and the message names its row.
 */
import type { ProviderName, ResourceSnapshot } from "../providers/model";

/** A stored delivery to apply (from ingress, the sweep, or a replay). */
export interface DeliveryMessage {
	kind: "delivery";
	deliveryId: number;
	provider: ProviderName;
	messageId: string;
}

/** A resource state with no inbox row behind it (from reconciliation). */
export interface SnapshotMessage {
	kind: "snapshot";
	provider: ProviderName;
	resource: ResourceSnapshot;
	/** The reconcile run that found the drift, for the run report. */
	runId: string | null;
	/**
	 * The window that sent it (absent in messages sent before it existed): a snapshot that
	 * dead-letters fails this window, so the run cannot move the watermark past it.
	 */
	window?: { wallet: string; idx: number };
	/**
	 * The delivery whose state this is, when it was moved from a shard that is not its resource's
	 * (src/apply/consumer.ts): a snapshot that dead-letters marks that delivery `failed`, replayable.
	 */
	origin?: number;
}

export type QueueMessage = DeliveryMessage | SnapshotMessage;

/** Queue names as in wrangler.toml; the queue handler dispatches on them. */
export const QUEUE_NAMES = {
	events: "webhook-events",
	eventsDeadLetter: "webhook-events-dlq",
	reconcile: "webhook-reconcile",
	reconcileDeadLetter: "webhook-reconcile-dlq",
} as const;

export function deliveryMessage(deliveryId: number, provider: ProviderName, messageId: string): DeliveryMessage {
	return { kind: "delivery", deliveryId, provider, messageId };
}

/** A RECONCILE job: one time window of one wallet. Its resume point (page token) lives in D1. */
export interface ReconcileJob {
	kind: "reconcile_window";
	runId: string;
	wallet: string;
	idx: number;
}
