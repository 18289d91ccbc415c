/**
 * The one signer per scheme (docs/providers.md), shared by the simulator, the send-test-event tool
 * and the tests (test/support/senders.ts). Each provider file declares its scheme and its bodies
 * (`sender` in src/providers/types.ts); this file signs by scheme, so it names no provider and a
 * new one that signs in a known way needs nothing here. WebCrypto, and the specification's
 * reference library for `id-timestamp-base64`, so it runs in Node and in workerd; the signing is
 * written from the schemes' rules, independently of the receiver's verification, and the tests
 * check it against that verification and against known-answer vectors.
 */
import { Webhook } from "standardwebhooks";
import { providers } from "../../src/providers";
import type { ProviderName } from "../../src/providers/model";
import type { Provider, SampleState, SenderModel, SigningScheme } from "../../src/providers/types";

/** Every message id and resource id the tools send starts with this: the console and admin API can tell them apart. */
export const SIMULATED_PREFIX = "sim_";

/** A registry name: a ProviderName, or a provider a test registers at run time. */
export type SimProvider = ProviderName;

/** The registered senders, read when called (a test may register one). */
export function simProviders(): SimProvider[] {
	return Object.keys(providers) as SimProvider[];
}

/** The registry entry of `provider`. */
export function registered(provider: SimProvider): Provider {
	const p = (providers as Readonly<Record<string, Provider>>)[provider];
	if (!p) throw new Error(`no provider named ${provider} in src/providers/index.ts`);
	return p;
}

/** How the tools play `provider`, from its registry entry. */
export function senderOf(provider: SimProvider): SenderModel {
	return registered(provider).sender;
}

/** The key encoding variable the receiver reads for `provider` (utf8 unless it says base64), if any. */
export function encodingVariable(provider: SimProvider): string | null {
	const signing = senderOf(provider).signing;
	return signing.kind === "timestamp-hex" ? (signing.encodingVariable ?? null) : null;
}

const enc = new TextEncoder();

async function hmac(key: Uint8Array, message: string): Promise<Uint8Array> {
	const k = await crypto.subtle.importKey("raw", new Uint8Array(key), { name: "HMAC", hash: "SHA-256" }, false, [
		"sign",
	]);
	return new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(message)));
}

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
/** Padded, unpadded or URL-safe base64, as the receiver accepts it (src/crypto/encoding.ts). */
const unb64Lenient = (s: string) => {
	const std = s.trim().replaceAll("-", "+").replaceAll("_", "/");
	return unb64(std.padEnd(Math.ceil(std.length / 4) * 4, "="));
};

/** The signature headers of `body` under `scheme`. `encoding`: how the receiver decodes the secret into a key. */
async function signatureHeaders(
	scheme: SigningScheme,
	secret: string,
	body: string,
	messageId: string,
	nowMs: number,
	encoding: "utf8" | "base64",
): Promise<Record<string, string>> {
	switch (scheme.kind) {
		case "timestamp-hex": {
			const t = String(scheme.unit === "ms" ? nowMs : Math.floor(nowMs / 1000));
			const key = encoding === "base64" ? unb64Lenient(secret) : enc.encode(secret);
			const headers: Record<string, string> = { [scheme.header]: `t=${t},v1=${hex(await hmac(key, `${t}.${body}`))}` };
			if (scheme.timestampHeader) headers[scheme.timestampHeader] = t;
			return headers;
		}
		case "body-hex":
			return { [scheme.header]: hex(await hmac(enc.encode(secret), body)) };
		case "id-timestamp-base64":
			// The specification's reference library signs (and accepts `whsec_` with or without it).
			return {
				"webhook-id": messageId,
				"webhook-timestamp": String(Math.floor(nowMs / 1000)),
				"webhook-signature": new Webhook(secret).sign(messageId, new Date(nowMs), body),
			};
	}
}

/**
 * The headers `provider` sends with `body`: its signature and its attempt headers. `messageId`
 * matters where the scheme signs it. `encoding` is the receiver's value of the provider's
 * encoding variable (see encodingVariable()).
 */
export async function signDelivery(
	provider: SimProvider,
	secret: string,
	body: string,
	messageId: string,
	nowMs: number,
	attempt = 1,
	encoding: "utf8" | "base64" = "utf8",
): Promise<Record<string, string>> {
	const sender = senderOf(provider);
	const signature = await signatureHeaders(sender.signing, secret, body, messageId, nowMs, encoding);
	return { ...signature, ...sender.attemptHeaders(messageId, attempt) };
}

/** One state of one simulated resource. */
export type SimState = SampleState;

/** The body announcing a state change, as `provider` shapes it. */
export function envelope(provider: SimProvider, messageId: string, s: SimState, attempt = 1): string {
	return senderOf(provider).sample(messageId, s, attempt);
}

/** Where the receiver keeps the resource and which version it must hold for state `s`. */
export function expectedResource(
	provider: SimProvider,
	s: SimState,
): { type: string; id: string; version: number; status: string } {
	return { ...senderOf(provider).expected(s), id: s.id, status: s.status };
}
