/**
 * Reads a body (a webhook request's, or a provider API's response) without ever buffering more
 * than `limit` bytes: a declared Content-Length over the limit is refused before reading, and a
 * stream that runs past the limit is cancelled as soon as it does.
 */
import type { Result } from "../result";

export type BodyResult = Result<{ bytes: Uint8Array }, { reason: "too_large"; size: number }>;

export async function readBodyCapped(message: Request | Response, limit: number): Promise<BodyResult> {
	const declared = Number(message.headers.get("content-length") ?? Number.NaN);
	if (Number.isFinite(declared) && declared > limit) {
		await message.body?.cancel().catch(() => {});
		return { ok: false, reason: "too_large", size: declared };
	}
	if (message.body === null) return { ok: true, bytes: new Uint8Array(0) };

	const reader = message.body.getReader();
	const chunks: Uint8Array[] = [];
	let size = 0;
	for (;;) {
		const { done, value } = await reader.read();
		if (done) break;
		size += value.byteLength;
		if (size > limit) {
			await reader.cancel().catch(() => {});
			return { ok: false, reason: "too_large", size };
		}
		chunks.push(value);
	}
	if (chunks.length === 1) return { ok: true, bytes: chunks[0] as Uint8Array };
	const bytes = new Uint8Array(size);
	let offset = 0;
	for (const c of chunks) {
		bytes.set(c, offset);
		offset += c.byteLength;
	}
	return { ok: true, bytes };
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Signed bodies are JSON, hence UTF-8; anything else is unparseable (500), never guessed at. */
export function decodeUtf8(bytes: Uint8Array): string | null {
	try {
		return strictUtf8.decode(bytes);
	} catch {
		return null;
	}
}
