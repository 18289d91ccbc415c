/**
 * One webhook delivery, from raw request to answer. The order of the steps is the design:
 * cap the body -> verify -> parse -> one D1 statement -> send the pointer -> 2xx.
 * Status codes follow DESIGN.md; 4xx only when the request is certainly not genuine, because
 * BlooBank never retries a 4xx (PROVIDERS 1.1).
 */
import type { Config, Env } from "../env";
import { errorMessage, log } from "../log";
import { keptHeadersJson } from "../providers";
import type { Provider } from "../providers/types";
import { deliveryMessage } from "../queue/messages";
import { decodeUtf8, readBodyCapped } from "./body";
import { markEnqueued, recordDelivery, releaseSendToken } from "./inbox";
import { recordRejection } from "./rejections";

/** Seconds the provider should wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 10;

export interface ReceiveContext {
	env: Env;
	config: Config;
	waitUntil(promise: Promise<unknown>): void;
	nowMs: number;
	clientIp: string | null;
}

function empty(status: number, headers?: HeadersInit): Response {
	return new Response(null, { status, headers });
}

function unavailable(): Response {
	return empty(503, { "Retry-After": String(RETRY_AFTER_SECONDS) });
}

export async function receive(provider: Provider, request: Request, ctx: ReceiveContext): Promise<Response> {
	const { env, config, nowMs } = ctx;
	const reject = (status: number, reason: string, size: number): Response => {
		log("warn", "webhook_rejected", { provider: provider.name, reason, status, size });
		ctx.waitUntil(
			recordRejection(env.DB, { provider: provider.name, reason, status, size, ip: ctx.clientIp, at: nowMs }),
		);
		return empty(status);
	};

	const body = await readBodyCapped(request, config.maxBodyBytes);
	if (!body.ok) return reject(413, "too_large", body.size);
	const size = body.bytes.byteLength;

	// Invariant 1: nothing below this line runs for an unverified body.
	const verified = await provider.verify({
		headers: request.headers,
		body: body.bytes,
		secrets: config.secrets[provider.name],
		nowMs,
		config,
	});
	if (!verified.ok) return reject(401, verified.reason, size);

	const text = decodeUtf8(body.bytes);
	const parsed = text === null ? null : provider.parse(text, request.headers, config);
	// Signed by the sender but not understood: 500, so the sender retries once we are fixed.
	if (text === null || parsed === null) return reject(500, "invalid_utf8", size);
	if (!parsed.ok) return reject(500, parsed.reason, size);
	const event = parsed.event;

	let outcome: Awaited<ReturnType<typeof recordDelivery>>;
	try {
		outcome = await recordDelivery(env.DB, event, text, size, keptHeadersJson(provider, request.headers), nowMs);
	} catch (err) {
		log("error", "inbox_write_failed", {
			provider: provider.name,
			messageId: event.messageId,
			error: errorMessage(err),
		});
		return unavailable();
	}

	const fields = { provider: provider.name, messageId: event.messageId, event: event.event, deliveryId: outcome.id };
	if (!outcome.mustSend) {
		log("info", outcome.kind === "new" ? "webhook_ignored" : "webhook_duplicate", fields);
		return empty(200);
	}

	try {
		await env.EVENTS.send(deliveryMessage(outcome.id, provider.name, event.messageId));
	} catch (err) {
		// Invariant 3: the row stays `received`; the sender's retry or the sweep sends it.
		log("error", "queue_send_failed", { ...fields, error: errorMessage(err) });
		ctx.waitUntil(releaseSendToken(env.DB, outcome.id).catch(() => {}));
		return unavailable();
	}
	// Not on the ack path: if this write is lost, the sweep re-sends and the consumer dedupes.
	ctx.waitUntil(
		markEnqueued(env.DB, [outcome.id], nowMs).catch((err) =>
			log("warn", "mark_enqueued_failed", { ...fields, error: errorMessage(err) }),
		),
	);
	log("info", outcome.kind === "new" ? "webhook_accepted" : "webhook_resent", fields);
	return empty(200);
}
