/**
 * HMAC-SHA256 over WebCrypto. Verification goes through `crypto.subtle.verify`, which compares in
 * constant time; we never compare MACs with `===`.
 */

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
	const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
	if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
	keyCache.set(id, key);
	return key;
}

/** True when any candidate MAC verifies under any key (rotation: several secrets, several signatures). */
export async function verifyAnyHmacSha256(
	keys: readonly Uint8Array[],
	data: Uint8Array,
	candidates: readonly Uint8Array[],
): Promise<boolean> {
	for (const keyBytes of keys) {
		const key = await hmacKey(keyBytes);
		for (const mac of candidates) {
			if (mac.byteLength !== 32) continue;
			if (await crypto.subtle.verify("HMAC", key, mac, data)) return true;
		}
	}
	return false;
}

/** Constant-time string comparison for bearer and path tokens. */
export function timingSafeEqualString(a: string, b: string): boolean {
	const enc = new TextEncoder();
	const x = enc.encode(a);
	const y = enc.encode(b);
	if (x.byteLength !== y.byteLength) {
		// Still spend the comparison, so the length is the only thing a timing attacker learns.
		crypto.subtle.timingSafeEqual(x, x);
		return false;
	}
	return crypto.subtle.timingSafeEqual(x, y);
}
