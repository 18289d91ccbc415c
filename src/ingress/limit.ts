/**
 * The optional rate limiter (WEBHOOK_RATE_LIMITER), keyed per client, never per sender: a key
 * per provider let unsigned junk use up a real provider's budget, so its genuine deliveries got
 * 503 until it gave up. Over the limit is 503, never 429 (docs/design.md invariant 9: a sender
 * may never retry a 4xx, docs/providers.md 1.1).
 */
import { errorMessage, log } from "../log";
import { parseIp } from "./cidr";

export type LimitScope = "webhook" | "admin" | "console";

/**
 * The client a limit applies to: an IPv4 address (IPv4-mapped IPv6 included), or an IPv6 /64,
 * which is what one client usually holds. Without a usable address (only outside Cloudflare's
 * edge, e.g. local development) all such requests share one key.
 */
export function clientKey(scope: LimitScope, ip: string | null): string {
	const parsed = ip === null ? null : parseIp(ip);
	if (!parsed) return `${scope}:(no address)`;
	let { version, value } = parsed;
	if (version === 6 && value >> 32n === 0xffffn) {
		version = 4;
		value &= 0xffffffffn;
	}
	if (version === 4) return `${scope}:${[24n, 16n, 8n, 0n].map((s) => (value >> s) & 0xffn).join(".")}`;
	const hextets = [112n, 96n, 80n, 64n].map((s) => ((value >> s) & 0xffffn).toString(16));
	return `${scope}:${hextets.join(":")}::/64`;
}

/**
 * True when the client is over its limit. A limiter that fails lets the request through: an
 * outage of an optional guard must not refuse genuine deliveries.
 */
export async function overLimit(limiter: RateLimit | undefined, key: string): Promise<boolean> {
	if (!limiter) return false;
	try {
		return !(await limiter.limit({ key })).success;
	} catch (err) {
		log("warn", "rate_limiter_failed", { error: errorMessage(err) });
		return false;
	}
}
