/**
 * How each provider signs a delivery (docs/providers.md): the one signer per scheme, shared by
 * the simulator, the send-test-event tool and the tests (test/support/senders.ts). WebCrypto, and
 * the Standard Webhooks reference library for that scheme, so it runs in Node and in workerd; it
 * is written from the providers' rules, independently of src/, and the tests check it against the
 * receiver's verification and against known-answer vectors.
 */
import { Webhook } from "standardwebhooks";

/** Every message id and resource id the tools send starts with this: the console and admin API can tell them apart. */
export const SIMULATED_PREFIX = "sim_";

export type SimProvider = "bloobank" | "bold" | "pazy" | "standard";
export const SIM_PROVIDERS: readonly SimProvider[] = ["bloobank", "bold", "pazy", "standard"];

const enc = new TextEncoder();

async function hmac(key: Uint8Array, message: string): Promise<Uint8Array> {
	const k = await crypto.subtle.importKey("raw", new Uint8Array(key), { name: "HMAC", hash: "SHA-256" }, false, [
		"sign",
	]);
	return new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(message)));
}

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
/** Padded, unpadded or URL-safe base64, as the receiver accepts it (src/crypto/encoding.ts). */
const unb64Lenient = (s: string) => {
	const std = s.trim().replaceAll("-", "+").replaceAll("_", "/");
	return unb64(std.padEnd(Math.ceil(std.length / 4) * 4, "="));
};

/**
 * The headers a provider sends with `body`. `messageId` matters for Standard Webhooks only.
 * `bloobankEncoding` is the receiver's BLOOBANK_SECRET_ENCODING: with base64 the HMAC key is the
 * secret's decoded bytes (docs/providers.md 1.2).
 */
export async function signDelivery(
	provider: SimProvider,
	secret: string,
	body: string,
	messageId: string,
	nowMs: number,
	attempt = 1,
	bloobankEncoding: "utf8" | "base64" = "utf8",
): Promise<Record<string, string>> {
	switch (provider) {
		case "bloobank": {
			const ts = String(nowMs);
			const key = bloobankEncoding === "base64" ? unb64Lenient(secret) : enc.encode(secret);
			const sig = hex(await hmac(key, `${ts}.${body}`));
			return {
				"x-bloobank-timestamp": ts,
				"x-bloobank-signature": `t=${ts},v1=${sig}`,
				"x-bloobank-delivery-attempt": String(attempt),
			};
		}
		case "bold":
			return {
				"x-hmac-signature": hex(await hmac(enc.encode(secret), body)),
				"x-attempt-id": `${messageId}-a${attempt}`,
			};
		case "pazy": {
			const t = String(Math.floor(nowMs / 1000));
			return {
				"x-pazy-signature": `t=${t},v1=${hex(await hmac(enc.encode(secret), `${t}.${body}`))}`,
				"x-pazy-webhook-attempt": String(attempt),
			};
		}
		case "standard":
			// The specification's reference library signs (and accepts `whsec_` with or without it).
			return {
				"webhook-id": messageId,
				"webhook-timestamp": String(Math.floor(nowMs / 1000)),
				"webhook-signature": new Webhook(secret).sign(messageId, new Date(nowMs), body),
			};
	}
}

/** One state of one simulated resource, as the provider would describe it. */
export interface SimState {
	id: string;
	version: number;
	status: string;
	amount: number;
	currency: string;
	direction: "IN" | "OUT";
	/** Event time (ms): increases with the version. */
	at: number;
}

/** The envelope of a state change, and the (type, id, version) the receiver must end at. */
export function envelope(provider: SimProvider, messageId: string, s: SimState, attempt = 1): string {
	const at = new Date(s.at).toISOString();
	switch (provider) {
		case "bloobank":
			return JSON.stringify({
				event: `payment_order.${s.status.toLowerCase()}`,
				messageId,
				deliveryAttempt: attempt,
				occurredAt: at,
				data: {
					id: s.id,
					wallet: "w1",
					ordVersion: s.version,
					direction: s.direction,
					status: s.status,
					amount: s.amount,
					currency: s.currency,
					createdAt: at,
					updatedAt: at,
				},
			});
		case "bold":
			return JSON.stringify({
				eventId: messageId,
				eventName: `payment.${s.status.toLowerCase()}`,
				entity: "payment",
				entityId: s.id,
				occurredOn: at,
				majorVersion: 1,
				minorVersion: 0,
				payload: { id: s.id, status: s.status, amount: s.amount, currency: s.currency },
			});
		case "pazy":
			return JSON.stringify({
				id: messageId,
				type: `payment.${s.status.toLowerCase()}`,
				createdAt: at,
				data: { paymentId: s.id, status: s.status, amount: s.amount, paymentDate: at },
			});
		case "standard":
			return JSON.stringify({
				type: `payment.${s.status.toLowerCase()}`,
				timestamp: at,
				data: { id: s.id, status: s.status, amount: s.amount },
			});
	}
}

/** Where the receiver keeps the resource and which version it must hold for state `s`. */
export function expectedResource(
	provider: SimProvider,
	s: SimState,
): { type: string; id: string; version: number; status: string } {
	return provider === "bloobank"
		? { type: "payment_order", id: s.id, version: s.version, status: s.status }
		: { type: "payment", id: s.id, version: s.at, status: s.status };
}
