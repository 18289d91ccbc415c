/** POSTs to ALERT_WEBHOOK_URL (operational alerts and the failed-payment effect). */
import type { Config } from "./env";
import { log } from "./log";

/** Alert POSTs are bounded: a slow alert endpoint must not hold up the consumer or the sweep. */
export const ALERT_TIMEOUT_MS = 3_000;
/** The name chat messages start with, so a shared channel tells this receiver's alerts apart. */
export const ALERT_SOURCE = "payment-webhook-receiver";
/** How much of a refusing target's answer is kept as its reason (logs, effect `last_error`). */
export const ALERT_REASON_CHARS = 200;
/** Chat tools cap a message (Discord: 2,000 characters); a summary never needs more. */
const SUMMARY_CHARS = 1_000;

export interface AlertFields extends Record<string, unknown> {
	/** The alert's name: a rule of src/sweep/alerts.ts or an effect kind. */
	alert: string;
}

/** A target that answered 4xx: it refuses this alert and will keep refusing it until fixed. */
export class AlertRejected extends Error {
	constructor(
		readonly status: number,
		readonly reason: string,
	) {
		super(`alert webhook answered ${status}${reason ? `: ${reason}` : ""}`);
	}
}

// Per isolate: each (alert name, status) refusal is logged once, then again only after that alert
// was delivered in between. The sweep retries an undelivered alert every minute; repeating the
// same refusal every minute would bury it.
const loggedRejections = new Set<string>();

/** Tests only: start from an isolate that has logged nothing. */
export function forgetLoggedRejections(): void {
	loggedRejections.clear();
}

/**
 * Posts `{ text, content, ...fields }`: `text` is what Slack shows, `content` what Discord shows
 * (both answer 400 without theirs); the structured fields are for everything else. The summary is
 * one line and must carry no secret. Does nothing without ALERT_WEBHOOK_URL; throws on a non-2xx
 * answer (AlertRejected for 4xx) so the caller retries.
 */
export async function postAlert(
	config: Config,
	summary: string,
	fields: AlertFields,
	idempotencyKey: string,
): Promise<void> {
	if (config.alertWebhookUrl === null) return;
	const line = `[${ALERT_SOURCE}] ${summary}`.replace(/\s+/g, " ").slice(0, SUMMARY_CHARS);
	const res = await fetch(config.alertWebhookUrl, {
		method: "POST",
		headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
		body: JSON.stringify({ text: line, content: line, ...fields }),
		signal: AbortSignal.timeout(ALERT_TIMEOUT_MS),
		// Never followed: a redirect could carry the alert (and its details) to another host.
		redirect: "manual",
	});
	const key = `${fields.alert}:${res.status}`;
	if (res.ok) {
		await res.body?.cancel();
		for (const k of loggedRejections) if (k.startsWith(`${fields.alert}:`)) loggedRejections.delete(k);
		return;
	}
	if (res.status < 400 || res.status >= 500) {
		await res.body?.cancel();
		throw new Error(`alert webhook answered ${res.status}`);
	}
	const reason = await shortReason(res);
	if (!loggedRejections.has(key)) {
		loggedRejections.add(key);
		// Never the URL: a chat webhook URL is itself the credential.
		log("error", "alert_rejected", { alert: fields.alert, status: res.status, reason });
	}
	throw new AlertRejected(res.status, reason);
}

/** The start of the answer's body on one line, read no further than needed. */
async function shortReason(res: Response): Promise<string> {
	if (!res.body) return "";
	const reader = res.body.getReader();
	const decoder = new TextDecoder();
	let text = "";
	try {
		while (text.length < ALERT_REASON_CHARS * 2) {
			const { done, value } = await reader.read();
			if (done) break;
			text += decoder.decode(value, { stream: true });
		}
	} catch {
		// A body cut off or timed out: keep what arrived.
	} finally {
		await reader.cancel().catch(() => {});
	}
	return text.replace(/\s+/g, " ").trim().slice(0, ALERT_REASON_CHARS);
}
