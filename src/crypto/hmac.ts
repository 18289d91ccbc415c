/**
 * HMAC-SHA256 over WebCrypto. MACs are compared with `crypto.subtle.timingSafeEqual`, never `===`.
 */

/**
 * workerd's SubtleCrypto, typed so this module also compiles for Node (the tools import the
 * provider registry, which reaches it): Node's types know neither timingSafeEqual nor byte views
 * over a possibly shared buffer.
 */
const subtle = crypto.subtle as unknown as {
	importKey(
		format: "raw",
		key: Uint8Array,
		algorithm: { name: "HMAC"; hash: "SHA-256" },
		extractable: false,
		usages: ["sign"],
	): Promise<CryptoKey>;
	sign(algorithm: "HMAC", key: CryptoKey, data: Uint8Array): Promise<ArrayBuffer>;
	timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean;
};

// Resolved keys only, never pending promises: a Worker must not await a promise another
// request created, and the cache is shared by every request of the isolate.
const keyCache = new Map<string, CryptoKey>();
const KEY_CACHE_LIMIT = 64;

function cacheId(keyBytes: Uint8Array): string {
	let s = "";
	for (const b of keyBytes) s += String.fromCharCode(b);
	return s;
}

/** Imports (and caches per isolate) an HMAC-SHA256 key; importKey is the costly part of a verify. */
async function hmacKey(keyBytes: Uint8Array): Promise<CryptoKey> {
	const id = cacheId(keyBytes);
	const cached = keyCache.get(id);
	if (cached) return cached;
	const key = await subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
	if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
	keyCache.set(id, key);
	return key;
}

/** HMAC-SHA256 computations since the isolate started: tests assert the per-request count. */
export const hmacCounter = { count: 0 };

/**
 * True when any candidate equals the MAC of `data` under any key (rotation: several secrets,
 * several signatures). Each key's MAC is computed once, whatever the number of candidates, and
 * every comparison is constant-time (docs/providers.md 1.2).
 */
export async function verifyAnyHmacSha256(
	keys: readonly Uint8Array[],
	data: Uint8Array,
	candidates: readonly Uint8Array[],
): Promise<boolean> {
	return (await matchingKey(keys, data, candidates)) !== null;
}

/** Like verifyAnyHmacSha256, and says which key matched: its position in `keys` (the first that did). */
export async function matchingKey(
	keys: readonly Uint8Array[],
	data: Uint8Array,
	candidates: readonly Uint8Array[],
): Promise<number | null> {
	const usable = candidates.filter((mac) => mac.byteLength === 32);
	if (usable.length === 0) return null;
	let match: number | null = null;
	for (const [position, keyBytes] of keys.entries()) {
		const key = await hmacKey(keyBytes);
		hmacCounter.count++;
		const mac = new Uint8Array(await subtle.sign("HMAC", key, data));
		// No early exit: the time spent does not say which candidate or key matched.
		for (const candidate of usable) if (subtle.timingSafeEqual(mac, candidate)) match ??= position;
	}
	return match;
}

/** Constant-time string comparison for bearer and path tokens. */
export function timingSafeEqualString(a: string, b: string): boolean {
	const enc = new TextEncoder();
	const x = enc.encode(a);
	const y = enc.encode(b);
	if (x.byteLength !== y.byteLength) {
		// Still spend the comparison, so the length is the only thing a timing attacker learns.
		subtle.timingSafeEqual(x, x);
		return false;
	}
	return subtle.timingSafeEqual(x, y);
}
