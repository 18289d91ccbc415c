/** POSTs to ALERT_WEBHOOK_URL (operational alerts and the failed-payment effect). */
import type { Config } from "./env";

/** Alert POSTs are bounded: a slow alert endpoint must not hold up the consumer or the sweep. */
export const ALERT_TIMEOUT_MS = 3_000;

/** Does nothing without ALERT_WEBHOOK_URL; throws on a non-2xx answer so the caller retries. */
export async function postAlert(config: Config, body: Record<string, unknown>, idempotencyKey: string): Promise<void> {
	if (config.alertWebhookUrl === null) return;
	const res = await fetch(config.alertWebhookUrl, {
		method: "POST",
		headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
		body: JSON.stringify(body),
		signal: AbortSignal.timeout(ALERT_TIMEOUT_MS),
	});
	if (!res.ok) throw new Error(`alert webhook answered ${res.status}`);
}
