/** A test-side BlooBank sender: signs like docs/providers.md 1.2 says, independently of src/. */
import { env } from "cloudflare:workers";
import { signDelivery } from "../../scripts/sim/signing";
import { locate, type Shard, type Shards, shardOfResource } from "../../src/db/shards";
import { getShards } from "../../src/env";
import { TEST_SECRETS } from "../vars";

export const SECRET = TEST_SECRETS.bloobank[0];
export const OLD_SECRET = TEST_SECRETS.bloobank[1];

function hex(bytes: ArrayBuffer): string {
	return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export async function hmacHex(secret: string | Uint8Array, message: string | Uint8Array): Promise<string> {
	const enc = new TextEncoder();
	const keyBytes = typeof secret === "string" ? enc.encode(secret) : secret;
	const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
	const data = typeof message === "string" ? enc.encode(message) : message;
	return hex(await crypto.subtle.sign("HMAC", key, data));
}

export interface OrderFields {
	id: string;
	ordVersion: number;
	status: string;
	amount?: number;
	currency?: string;
	direction?: "IN" | "OUT";
	wallet?: string;
}

/**
 * When the fixture's events happened: when the test file loaded, so bodies built twice are equal
 * and no event is hours old (those are checked against the API first: BLOOBANK_REFRESH_AFTER_SECONDS).
 */
const EVENTS_AT = new Date().toISOString();

export function orderEvent(messageId: string, o: OrderFields, event = `payment_order.${o.status.toLowerCase()}`) {
	return {
		event,
		messageId,
		deliveryAttempt: 1,
		occurredAt: EVENTS_AT,
		data: {
			wallet: "w1",
			amount: 1000,
			currency: "BRL",
			direction: "IN",
			createdAt: "2026-11-30T00:00:00.000Z",
			updatedAt: "2026-11-30T00:00:00.000Z",
			...o,
		},
	};
}

export interface SignOptions {
	secret?: string;
	timestampMs?: number;
	/** Override the whole signature header. */
	signatureHeader?: string | null;
	timestampHeader?: string | null;
	path?: string;
	headers?: Record<string, string>;
}

export async function signedRequest(body: string | object, opts: SignOptions = {}): Promise<Request> {
	const raw = typeof body === "string" ? body : JSON.stringify(body);
	const signed = await signDelivery("bloobank", opts.secret ?? SECRET, raw, "", opts.timestampMs ?? Date.now());
	const headers: Record<string, string> = { "content-type": "application/json", ...opts.headers };
	const sigHeader =
		opts.signatureHeader === undefined ? (signed["x-bloobank-signature"] ?? null) : opts.signatureHeader;
	const tsHeader = opts.timestampHeader === undefined ? (signed["x-bloobank-timestamp"] ?? null) : opts.timestampHeader;
	if (sigHeader !== null) headers["x-bloobank-signature"] = sigHeader;
	if (tsHeader !== null) headers["x-bloobank-timestamp"] = tsHeader;
	return new Request(`https://receiver.test${opts.path ?? "/webhooks/bloobank"}`, {
		method: "POST",
		headers,
		body: raw,
	});
}

/** The shard an order lives in (src/db/shards.ts); wallet w1 is orderEvent's default. */
export function orderShard(id: string, shards: Shards = getShards(env), wallet = "w1"): Shard {
	return shardOfResource(shards, { provider: "bloobank", type: "payment_order", wallet, id });
}

/** The shard index a queue pointer's id names (src/db/shards.ts locate). */
export function pointerShard(deliveryId: number): number {
	return locate(getShards(env), deliveryId)?.shard.index ?? -1;
}
