/**
 * Test-side senders for the conformance suite: each builds its provider's envelopes and signs
 * them with the one signer per scheme (scripts/sim/signing.ts), written from docs/providers.md
 * independently of src/ (Standard Webhooks through the specification's reference library).
 */
import { type SimProvider, signDelivery } from "../../scripts/sim/signing";
import { TEST_SECRETS } from "../vars";

export interface SignOptions {
	secret?: string;
	nowMs?: number;
	messageId: string;
	/** Sign this, send the body given to request() (a tampered body). */
	signedBody?: string;
}

export interface Sender {
	/** A registry name (a ProviderName, or a provider a test registers). */
	name: string;
	secrets: readonly string[];
	/** Whether the scheme signs a timestamp (so stale/future requests exist). */
	timestamped: boolean;
	signatureHeader: string;
	resourceType: string;
	/** A state change of resource `id` at `version` (1, 2, 3...: later is newer). */
	event(messageId: string, id: string, version: number, status: string): string;
	/** A verified event we do not model (stored as ignored). */
	unmodelled(messageId: string): string;
	/** A verified body we cannot apply (stored as `ignored` with a note, answered 200). */
	malformed(messageId: string): string;
	headers(body: string, opts: SignOptions): Promise<Record<string, string>>;
}

const BASE_MS = Date.parse("2026-11-01T00:00:00.000Z");
const at = (version: number) => new Date(BASE_MS + version * 60_000).toISOString();

export const bloobankSender: Sender = {
	name: "bloobank",
	secrets: TEST_SECRETS.bloobank,
	timestamped: true,
	signatureHeader: "x-bloobank-signature",
	resourceType: "payment_order",
	event: (messageId, id, version, status) =>
		JSON.stringify({
			event: `payment_order.${status.toLowerCase()}`,
			messageId,
			deliveryAttempt: 1,
			data: { id, wallet: "w1", ordVersion: version, status, amount: 100, currency: "BRL" },
		}),
	unmodelled: (messageId) =>
		JSON.stringify({ event: "balance.updated", messageId, data: { wallet: "w1", balance: 1 } }),
	malformed: (messageId) =>
		JSON.stringify({ event: "payment_order.success", messageId, data: { ordVersion: 1, status: "SUCCESS" } }),
	headers: (body, o) => sign("bloobank", body, o),
};

export const boldSender: Sender = {
	name: "bold",
	secrets: TEST_SECRETS.bold,
	timestamped: false,
	signatureHeader: "x-hmac-signature",
	resourceType: "charge",
	event: (messageId, id, version, status) =>
		JSON.stringify({
			eventId: messageId,
			attemptId: `att-${messageId}`,
			eventName: `charge.${status.toLowerCase()}`,
			entity: "charge",
			entityId: id,
			occurredOn: at(version),
			majorVersion: 1,
			minorVersion: 3,
			payload: { id, status },
		}),
	// Bold models every entity; what it does not apply is an unsupported major version.
	unmodelled: (messageId) =>
		JSON.stringify({
			eventId: messageId,
			eventName: "charge.paid",
			entity: "charge",
			entityId: "c",
			occurredOn: at(1),
			majorVersion: 2,
			minorVersion: 0,
			payload: {},
		}),
	malformed: (messageId) =>
		JSON.stringify({
			eventId: messageId,
			eventName: "charge.paid",
			entity: "charge",
			occurredOn: at(1),
			majorVersion: 1,
			minorVersion: 0,
			payload: {},
		}),
	headers: (body, o) => sign("bold", body, o),
};

export const pazySender: Sender = {
	name: "pazy",
	secrets: TEST_SECRETS.pazy,
	timestamped: true,
	signatureHeader: "x-pazy-signature",
	resourceType: "payment",
	event: (messageId, id, version, status) =>
		JSON.stringify({
			id: messageId,
			type: `payment.${status.toLowerCase()}`,
			createdAt: at(version),
			data: { paymentId: id, status, paymentDate: at(version) },
		}),
	unmodelled: (messageId) =>
		JSON.stringify({ id: messageId, type: "payout.created", createdAt: at(1), data: { payoutId: "p" } }),
	malformed: (messageId) =>
		JSON.stringify({ id: messageId, type: "payment.succeeded", createdAt: at(1), data: { status: "x" } }),
	headers: (body, o) => sign("pazy", body, o),
};

export const standardSender: Sender = {
	name: "standard",
	secrets: TEST_SECRETS.standard,
	timestamped: true,
	signatureHeader: "webhook-signature",
	resourceType: "invoice",
	// The version of a Standard Webhooks event is its payload `timestamp` (see STANDARD_MAPPING).
	event: (_messageId, id, version, status) =>
		JSON.stringify({ type: `invoice.${status.toLowerCase()}`, timestamp: at(version), data: { id, status } }),
	unmodelled: () => JSON.stringify({ type: "ping", data: {} }),
	malformed: () => JSON.stringify({ type: "order.paid", data: { status: "x" } }),
	headers: (body, o) => sign("standard", body, o),
};

/** The one signer per scheme (scripts/sim/signing.ts), as every sender here signs. */
function sign(provider: SimProvider, body: string, o: SignOptions): Promise<Record<string, string>> {
	const secret = o.secret ?? TEST_SECRETS[provider][0];
	return signDelivery(provider, secret, o.signedBody ?? body, o.messageId, o.nowMs ?? Date.now());
}

export const SENDERS: readonly Sender[] = [bloobankSender, boldSender, pazySender, standardSender];

export async function senderRequest(sender: Sender, body: string, opts: SignOptions): Promise<Request> {
	return new Request(`https://receiver.test/webhooks/${sender.name}`, {
		method: "POST",
		headers: { "content-type": "application/json", ...(await sender.headers(body, opts)) },
		body,
	});
}
