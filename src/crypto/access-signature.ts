/**
 * The Access Protocol request signature (docs/providers.md 1.5): ECDSA over secp256k1 of
 * SHA-256(canonical string), low-S, base64. WebCrypto has no secp256k1, so the curve comes from
 * @noble/curves (audited); only the hashing is WebCrypto's.
 */
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bytesToBase64, bytesToHex, hexToBytes, utf8 } from "./encoding";

export type SignatureFormat = "compact" | "der";

export async function sha256(data: Uint8Array): Promise<Uint8Array> {
	return new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(data)));
}

/** `{accessKey}:{requestId}:{timestamp}:{METHOD}:{pathname}:{bodySha256Hex}` */
export function canonicalString(parts: {
	accessKey: string;
	requestId: string;
	timestamp: string;
	method: string;
	pathname: string;
	bodySha256Hex: string;
}): string {
	return [
		parts.accessKey,
		parts.requestId,
		parts.timestamp,
		parts.method.toUpperCase(),
		parts.pathname,
		parts.bodySha256Hex,
	].join(":");
}

/** Parses a private key (64 hex chars) into a valid secp256k1 secret key, or null. */
export function parsePrivateKey(hex: string): Uint8Array | null {
	const bytes = /^[0-9a-fA-F]{64}$/.test(hex.trim()) ? hexToBytes(hex.trim()) : null;
	return bytes && secp256k1.utils.isValidSecretKey(bytes) ? bytes : null;
}

/** The 65-byte uncompressed public key (`04...`, 130 hex chars) the provider registers. */
export function publicKeyHex(privateKey: Uint8Array): string {
	return bytesToHex(secp256k1.getPublicKey(privateKey, false));
}

export async function signCanonical(
	canonical: string,
	privateKey: Uint8Array,
	format: SignatureFormat,
): Promise<string> {
	const digest = await sha256(utf8(canonical));
	// The digest is already SHA-256(canonical): no second hash (prehash false); low-S always.
	return bytesToBase64(secp256k1.sign(digest, privateKey, { prehash: false, lowS: true, format }));
}
