/**
 * The client of a sender's list API (docs/providers.md 1.5; where and how to sign come from the
 * sender's `api`, src/providers/types.ts): every attempt signed afresh (new request id and
 * timestamp: the server rejects a reused id as REPLAY_DETECTED), bounded by a timeout, 429
 * honoured through a clamped Retry-After, 5xx and network errors retried with exponential backoff
 * and jitter, errors parsed into a typed value. Expected failures are values. It speaks the list
 * protocol of docs/providers.md 1.5 (`filter`, `order_by`, `page_size`, `page_token`; `{ items,
 * nextPageToken }`; `{ error: { code, status, message, details } }`); a sender with another
 * protocol needs a client of its own. Answers are untrusted input (the contract is one the other
 * side may break): bodies are read under a byte cap and a page must not hold more items than asked.
 */
import { readBodyCapped } from "../ingress/body";
import { errorMessage } from "../log";
import type { ProviderApi } from "../providers/types";

/** A provider answer's body, at most `cap` bytes (it is untrusted input), or null when larger. */
async function readCapped(res: Response, cap: number): Promise<Uint8Array | null> {
	const body = await readBodyCapped(res, cap);
	return body.ok ? body.bytes : null;
}

import type { Result } from "../result";
import { backoff } from "../time";

/** The published best practices: a bounded timeout (<= 3 s) on every call to the provider (docs/providers.md 1.5). */
export const REQUEST_TIMEOUT_MS = 3_000;
export const MAX_ATTEMPTS = 3;
/** A Retry-After longer than this is not slept through; the job is re-queued with at least that delay. */
export const MAX_INLINE_RETRY_AFTER_MS = 5_000;
export const PAGE_SIZE = 100;
/**
 * A page is 100 orders of a few KB each (about 0.2 MB in practice); 4 MiB leaves room for orders
 * with large `metadata` (40 KiB each) while bounding what one answer can make the isolate hold
 * (128 MB for everything). Over the cap the answer is refused, not parsed.
 */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Error bodies only feed a message of at most 300 characters. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Queues cannot delay a message longer than 12 hours; a longer Retry-After is not meaningful to us. */
export const MAX_RETRY_AFTER_SECONDS = 12 * 60 * 60;

export type ApiError =
	| { kind: "rate_limited"; retryAfterSeconds: number; message: string }
	| { kind: "unavailable"; message: string }
	/** An answer that breaks the contract (too large, more items than asked): retrying will not fix it. */
	| { kind: "invalid_response"; message: string }
	| { kind: "invalid_page_token"; message: string }
	| { kind: "unauthenticated"; httpStatus: number; code: string; message: string }
	| { kind: "rejected"; httpStatus: number; code: string; reason: string | null; message: string };

export type ApiResult<T> = Result<{ value: T }, { error: ApiError }>;

export interface OrdersPage {
	items: unknown[];
	nextPageToken: string | null;
}

export interface ClientDeps {
	fetch: typeof fetch;
	now: () => number;
	sleep: (ms: number) => Promise<void>;
	random: () => number;
	timeoutMs: number;
	/** Called once per HTTP attempt (subrequest accounting). */
	onAttempt?: () => void;
}

export const defaultDeps = (): ClientDeps => ({
	fetch: (input, init) => fetch(input, init),
	now: () => Date.now(),
	sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
	random: Math.random,
	timeoutMs: REQUEST_TIMEOUT_MS,
});

interface ErrorEnvelope {
	error?: { code?: unknown; status?: unknown; message?: unknown; details?: { reason?: unknown }[] };
}

/**
 * Retry-After (seconds, or an HTTP date) as whole seconds in [1 s, 12 h]. Missing, 0, negative or
 * malformed becomes 1 s, so a 429 never turns into a tight loop of signed requests; huge becomes
 * 12 h, the longest delay a queue message can take.
 */
export function retryAfterSeconds(header: string | null, nowMs: number): number {
	const value = header?.trim() ?? "";
	const seconds = /^\d+(\.\d+)?$/.test(value) ? Number(value) : (Date.parse(value) - nowMs) / 1000;
	if (!Number.isFinite(seconds)) return 1;
	return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(seconds)));
}

async function parseError(res: Response): Promise<{ code: string; reason: string | null; message: string }> {
	let body: ErrorEnvelope = {};
	try {
		const bytes = await readCapped(res, MAX_ERROR_BODY_BYTES);
		if (bytes) body = JSON.parse(new TextDecoder().decode(bytes)) as ErrorEnvelope;
	} catch {
		// Not the documented envelope: keep the HTTP status as the whole story.
	}
	const e = body.error ?? {};
	const reason = e.details?.find((d) => typeof d?.reason === "string")?.reason;
	return {
		code: typeof e.status === "string" ? e.status : typeof e.code === "string" ? e.code : String(res.status),
		reason: typeof reason === "string" ? reason : null,
		message: (typeof e.message === "string" ? e.message : res.statusText).slice(0, 300),
	};
}

/** Full jitter on an exponential base: 250 ms, 500 ms, 1 s ... */
export function backoffMs(attempt: number, random: () => number): number {
	return Math.round(backoff(attempt, 250, Number.POSITIVE_INFINITY) * (0.5 + random()));
}

/** A sender's API and its parsed credentials: what the client needs to call it. */
export interface ApiTarget {
	api: ProviderApi;
	credentials: unknown;
}

export class ApiClient {
	constructor(
		private readonly target: ApiTarget,
		private readonly deps: ClientDeps = defaultDeps(),
	) {}

	/** The exact URL sent: its path and query are what the signature covers. */
	listUrl(wallet: string, params: { filter: string; orderBy: string; pageToken: string | null }): URL {
		const url = this.target.api.listUrl(this.target.credentials, wallet);
		url.searchParams.set("filter", params.filter);
		url.searchParams.set("order_by", params.orderBy);
		url.searchParams.set("page_size", String(PAGE_SIZE));
		if (params.pageToken) url.searchParams.set("page_token", params.pageToken);
		return url;
	}

	async listPage(
		wallet: string,
		params: { filter: string; orderBy: string; pageToken: string | null },
	): Promise<ApiResult<OrdersPage>> {
		const result = await this.request(this.listUrl(wallet, params));
		if (!result.ok) return result;
		const body = result.value as { items?: unknown; nextPageToken?: unknown };
		if (
			!Array.isArray(body.items) ||
			(body.nextPageToken !== null && body.nextPageToken !== undefined && typeof body.nextPageToken !== "string")
		) {
			return { ok: false, error: { kind: "unavailable", message: "list response is not { items, nextPageToken }" } };
		}
		// page_size is a maximum (docs/providers.md 1.5): more items than asked is not a page we understand.
		if (body.items.length > PAGE_SIZE) {
			return {
				ok: false,
				error: {
					kind: "invalid_response",
					message: `page of ${body.items.length} items where ${PAGE_SIZE} were asked`,
				},
			};
		}
		return {
			ok: true,
			value: { items: body.items, nextPageToken: (body.nextPageToken as string | null | undefined) || null },
		};
	}

	/** One resource as the provider holds it now. */
	async getOne(wallet: string, id: string): Promise<ApiResult<unknown>> {
		return this.request(this.target.api.itemUrl(this.target.credentials, wallet, id));
	}

	private async request(url: URL): Promise<ApiResult<unknown>> {
		let last: ApiError = { kind: "unavailable", message: "no attempt made" };
		for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
			if (attempt > 1) {
				await this.deps.sleep(
					last.kind === "rate_limited" ? last.retryAfterSeconds * 1000 : backoffMs(attempt - 1, this.deps.random),
				);
			}
			this.deps.onAttempt?.();
			let res: Response;
			try {
				// Signed per attempt: a fresh request id and timestamp every time.
				const headers = await this.target.api.signedHeaders(this.target.credentials, "GET", url, this.deps.now());
				res = await this.deps.fetch(url.toString(), {
					method: "GET",
					headers,
					signal: AbortSignal.timeout(this.deps.timeoutMs),
					// A redirect is a misconfigured base URL, never followed: the signed path would not match.
					redirect: "manual",
				});
			} catch (err) {
				last = {
					kind: "unavailable",
					message: `network: ${(err as Error).name === "TimeoutError" ? "timed out" : errorMessage(err)}`.slice(0, 300),
				};
				continue;
			}
			if (res.ok) {
				const bytes = await readCapped(res, MAX_RESPONSE_BYTES);
				if (bytes === null) {
					return {
						ok: false,
						error: { kind: "invalid_response", message: `response larger than ${MAX_RESPONSE_BYTES} bytes` },
					};
				}
				try {
					return { ok: true, value: JSON.parse(new TextDecoder().decode(bytes)) };
				} catch {
					last = { kind: "unavailable", message: "response body is not JSON" };
					continue;
				}
			}
			const e = await parseError(res);
			if (res.status === 429) {
				// Every 429 is an attempt: at most MAX_ATTEMPTS per request, then the window decides.
				const seconds = retryAfterSeconds(res.headers.get("retry-after"), this.deps.now());
				last = { kind: "rate_limited", retryAfterSeconds: seconds, message: e.message };
				if (seconds * 1000 > MAX_INLINE_RETRY_AFTER_MS) return { ok: false, error: last };
				continue;
			}
			if (res.status >= 500) {
				last = { kind: "unavailable", message: `${res.status} ${e.code}: ${e.message}` };
				continue;
			}
			if (e.reason === "INVALID_PAGE_TOKEN" || e.code === "INVALID_PAGE_TOKEN")
				return { ok: false, error: { kind: "invalid_page_token", message: e.message } };
			if (res.status === 401 || res.status === 403) {
				return {
					ok: false,
					error: { kind: "unauthenticated", httpStatus: res.status, code: e.code, message: e.message },
				};
			}
			return {
				ok: false,
				error: { kind: "rejected", httpStatus: res.status, code: e.code, reason: e.reason, message: e.message },
			};
		}
		return { ok: false, error: last };
	}
}
