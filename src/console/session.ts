/**
 * The console session (docs/design.md, operator console): a cookie `<sid>.<expires>.<mac>`,
 * HMAC-SHA256 under a key derived from ADMIN_TOKEN, so rotating the token ends every session and
 * no session state lives in D1. The CSRF token is another MAC of the session id under the same
 * key: a page can carry it, a foreign site cannot compute it.
 */

import { utf8 } from "../crypto/encoding";
import { timingSafeEqualString } from "../crypto/hmac";

export const SESSION_COOKIE = "console_session";
export const SESSION_TTL_MS = 8 * 60 * 60_000;

/** The console's clock; tests move it to expire a session (test/console/session.test.ts). */
export const consoleClock = { now: (): number => Date.now() };

const keys = new Map<string, Promise<CryptoKey>>();

/** HKDF from the admin token; cached per token, so one derivation per isolate. */
function sessionKey(adminToken: string): Promise<CryptoKey> {
	let key = keys.get(adminToken);
	if (!key) {
		key = crypto.subtle
			.importKey("raw", utf8(adminToken), "HKDF", false, ["deriveKey"])
			.then((base) =>
				crypto.subtle.deriveKey(
					{ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: utf8("console-session-v1") },
					base,
					{ name: "HMAC", hash: "SHA-256", length: 256 },
					false,
					["sign", "verify"],
				),
			);
		keys.clear();
		keys.set(adminToken, key);
	}
	return key;
}

async function mac(adminToken: string, purpose: string, value: string): Promise<string> {
	const sig = await crypto.subtle.sign("HMAC", await sessionKey(adminToken), utf8(`${purpose}\n${value}`));
	return base64UrlEncode(new Uint8Array(sig));
}

export interface Session {
	id: string;
	expiresMs: number;
}

export async function createSession(adminToken: string, nowMs: number): Promise<{ cookie: string; session: Session }> {
	const id = base64UrlEncode(crypto.getRandomValues(new Uint8Array(18)));
	const expiresMs = nowMs + SESSION_TTL_MS;
	const body = `${id}.${expiresMs}`;
	return { cookie: `${body}.${await mac(adminToken, "session", body)}`, session: { id, expiresMs } };
}

/** The session a cookie value proves, or null (bad shape, bad MAC, expired). */
export async function readSession(
	adminToken: string,
	value: string | undefined,
	nowMs: number,
): Promise<Session | null> {
	const m = /^([A-Za-z0-9_-]{24})\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(value ?? "");
	if (!m) return null;
	const [, id = "", expires = "", sig = ""] = m;
	const expected = await mac(adminToken, "session", `${id}.${expires}`);
	if (!timingSafeEqualString(expected, sig)) return null;
	const expiresMs = Number(expires);
	return expiresMs > nowMs ? { id, expiresMs } : null;
}

export function csrfToken(adminToken: string, session: Session): Promise<string> {
	return mac(adminToken, "csrf", session.id);
}

function base64UrlEncode(bytes: Uint8Array): string {
	let bin = "";
	for (const b of bytes) bin += String.fromCharCode(b);
	return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
