/**
 * One webhook delivery, from raw request to receipt. The order of the steps is the design:
 * source gates -> signature headers and timestamp -> cap the body -> MACs -> parse -> one D1
 * statement -> send the pointer. Everything before the MACs costs no more than reading headers.
 * Each way out is an `Ending`; its status code comes from the one table in ./answers.ts.
 */
import { releaseSendToken } from "../db/deliveries";
import { isMissingSchema, MIGRATIONS_HINT } from "../db/health";
import { globalId, layoutHolds, shardOfDelivery } from "../db/shards";
import { type Env, getShards, type WebhookConfig } from "../env";
import { errorMessage, log } from "../log";
import { keptHeadersJson } from "../providers";
import { verifiedBy } from "../providers/signature";
import type { Provider } from "../providers/types";
import { deliveryMessage } from "../queue/messages";
import { ANSWERS, type Ending, type Outcome } from "./answers";
import { decodeUtf8, readBodyCapped } from "./body";
import { ipAllowed } from "./cidr";
import { recordDelivery } from "./inbox";
import { clientKey, overLimit } from "./limit";

export interface Receipt {
	status: number;
	outcome: Outcome;
	/** Why it ended so, for logs and the rejection log: a code, never input; null on success. */
	reason: Ending | null;
	size: number;
	messageId: string | null;
	deliveryId: number | null;
}

export interface ReceiveContext {
	env: Env;
	config: WebhookConfig;
	waitUntil(promise: Promise<unknown>): void;
	nowMs: number;
	clientIp: string | null;
}

/** The receipt of a request that ended with `ending` (its status and outcome from ANSWERS). */
export function receipt(
	ending: Ending,
	extra: Partial<Pick<Receipt, "size" | "messageId" | "deliveryId">> = {},
): Receipt {
	const { status, outcome } = ANSWERS[ending];
	const success = outcome === "accepted" || outcome === "resent" || outcome === "duplicate" || outcome === "ignored";
	return { status, outcome, reason: success ? null : ending, size: 0, messageId: null, deliveryId: null, ...extra };
}

export async function receive(provider: Provider, request: Request, ctx: ReceiveContext): Promise<Receipt> {
	const { env, config, nowMs } = ctx;

	// Source gates: cheap, before reading a byte of the body. A stale allow-list must not turn
	// genuine deliveries into permanent failures: 503 (retried) and an alert, never 403.
	if (config.allowedSourceCidrs && !(ctx.clientIp && ipAllowed(ctx.clientIp, config.allowedSourceCidrs))) {
		return receipt("source_not_allowed");
	}
	// Per client, never per sender (limit.ts); allow-listed sources (all that pass the gate above
	// when a list is set) are not limited.
	const listed = config.allowedSourceCidrs !== null;
	if (!listed && (await overLimit(env.WEBHOOK_RATE_LIMITER, clientKey("webhook", ctx.clientIp)))) {
		return receipt("rate_limited");
	}

	// Headers and timestamp first: a request without a plausible signature costs no body read.
	const check = provider.checkSignature({ headers: request.headers, nowMs, config });
	if (!check.ok) return receipt(check.reason);
	const body = await readBodyCapped(request, config.maxBodyBytes);
	if (!body.ok) return receipt("too_large", { size: body.size });
	const size = body.bytes.byteLength;

	// Invariant 1: nothing below this line runs for an unverified body.
	const verified = await verifiedBy(check, body.bytes, config.keys[provider.name]);
	if (!verified.ok) return receipt(verified.reason, { size });

	const text = decodeUtf8(body.bytes);
	if (text === null) return receipt("invalid_utf8", { size });
	const parsed = provider.parse(text, request.headers, config.providerSettings[provider.name]);
	// Signed by the sender but not understood: 500, so the sender retries once we are fixed.
	if (!parsed.ok) return receipt(parsed.reason, { size });
	const event = parsed.event;
	const base = { size, messageId: event.messageId };

	// The delivery's shard is its resource's (src/db/shards.ts): its duplicates, its state and its
	// effects are all decided inside that one database.
	const shards = getShards(env);
	const shard = shardOfDelivery(shards, event.provider, event.messageId, event.resource);
	let outcome: Awaited<ReturnType<typeof recordDelivery>>;
	try {
		if (!(await layoutHolds(shards, nowMs))) {
			log("error", "shard_layout_changed", { provider: provider.name, messageId: event.messageId });
			return receipt("config_error", base);
		}
		// The clock at the write, not at the request's start: the send lease (SEND_LEASE_MS) runs
		// from here, so a slow upload does not eat into it.
		const writtenAt = Date.now();
		const kept = keptHeadersJson(provider, request.headers);
		outcome = await recordDelivery(shard.db, event, text, size, kept, writtenAt, verified.position);
	} catch (err) {
		const missing = isMissingSchema(err);
		log("error", missing ? "migrations_not_applied" : "inbox_write_failed", {
			provider: provider.name,
			messageId: event.messageId,
			error: errorMessage(err),
			...(missing ? { hint: MIGRATIONS_HINT } : {}),
		});
		return receipt("d1_error", base);
	}

	const deliveryId = globalId(shard.index, outcome.id);
	if (!outcome.mustSend) {
		return receipt(outcome.kind === "new" ? "ignored" : "duplicate", { ...base, deliveryId });
	}
	try {
		await env.EVENTS.send(deliveryMessage(deliveryId, provider.name, event.messageId));
	} catch (err) {
		// Invariant 3: the row stays `received`; the sender's retry or the sweep sends it.
		log("error", "queue_send_failed", {
			provider: provider.name,
			messageId: event.messageId,
			error: errorMessage(err),
		});
		ctx.waitUntil(releaseSendToken(shard.db, outcome.id).catch(() => {}));
		return receipt("queue_error", { ...base, deliveryId });
	}
	return receipt(outcome.kind === "new" ? "accepted" : "resent", { ...base, deliveryId });
}
