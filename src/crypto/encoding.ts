/** Byte encodings used at the trust boundary. Strict: anything malformed is `null`, never a guess. */

const encoder = new TextEncoder();

export function utf8(text: string): Uint8Array {
	return encoder.encode(text);
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
	let length = 0;
	for (const p of parts) length += p.byteLength;
	const out = new Uint8Array(length);
	let offset = 0;
	for (const p of parts) {
		out.set(p, offset);
		offset += p.byteLength;
	}
	return out;
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

export function hexToBytes(hex: string): Uint8Array | null {
	if (!HEX.test(hex)) return null;
	const out = new Uint8Array(hex.length / 2);
	for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
	return out;
}

export function bytesToHex(bytes: Uint8Array): string {
	let out = "";
	for (const b of bytes) out += b.toString(16).padStart(2, "0");
	return out;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function base64ToBytes(b64: string): Uint8Array | null {
	if (!BASE64.test(b64)) return null;
	const bin = atob(b64);
	const out = new Uint8Array(bin.length);
	for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
	return out;
}

export function bytesToBase64(bytes: Uint8Array): string {
	let bin = "";
	for (const b of bytes) bin += String.fromCharCode(b);
	return btoa(bin);
}

/**
 * Base64 as people paste it: padded or not, the RFC 4648 alphabet or its URL-safe
 * variant (docs/providers.md 1.2). Still strict about everything else: a stray character or an impossible length is null.
 */
export function base64ToBytesLenient(text: string): Uint8Array | null {
	const s = text.trim().replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
	if (!/^[A-Za-z0-9+/]*$/.test(s) || s.length % 4 === 1) return null;
	return base64ToBytes(s.padEnd(s.length + ((4 - (s.length % 4)) % 4), "="));
}
