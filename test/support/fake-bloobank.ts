/**
 * A fake BlooBank paymentOrders API, served inside the tests. It authenticates every request the
 * way docs/providers.md 1.5 describes, using the curve library's own `verify` and the registered public
 * key (never our signer): access key, +-10 s clock, fresh request id, signature over the canonical
 * string. It pages a seeded set of orders with opaque, expiring page tokens, and can be scripted
 * to fail.
 */
import { secp256k1 } from "@noble/curves/secp256k1.js";

export const ACCESS_KEY = "ak_test_0123456789";
export const PRIVATE_KEY_HEX = "1f".repeat(32);
export const BASE_URL = "https://bloobank.test/txengine/v1";

export interface FakeOrder {
	id: string;
	wallet: string;
	ordVersion: number;
	status: string;
	amount: number;
	currency: string;
	direction: "IN" | "OUT";
	createdAt: string;
	updatedAt: string;
	metadata?: unknown;
}

type Script = (req: Request) => Response | Promise<Response> | null;

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
export const errorBody = (status: number, code: string, reason: string, message: string) =>
	Response.json({ error: { code: status, status: code, message, details: [{ reason }] } }, { status });

export class FakeBlooBank {
	readonly publicKey = secp256k1.getPublicKey(
		Uint8Array.from(PRIVATE_KEY_HEX.match(/../g) ?? [], (h) => Number.parseInt(h, 16)),
		false,
	);
	orders: FakeOrder[] = [];
	/** Every request the fake saw, with whether it authenticated. */
	requests: { url: string; authenticated: boolean; reason?: string }[] = [];
	private seenRequestIds = new Set<string>();
	/** One-shot behaviours, in order; one that returns null waits for a later request. */
	private scripts: Script[] = [];

	/** The orders sorted by updatedAt, kept between pages (a 100,000-order set is re-sorted only on seed). */
	private sorted: { at: number; order: FakeOrder }[] | null = null;

	constructor(readonly format: "compact" | "der" = "compact") {}

	seed(
		n: number,
		make: (i: number) => Partial<FakeOrder> = () => ({}),
		wallet = "w1",
		at = Date.now() - 60 * 60_000,
	): FakeOrder[] {
		const made = Array.from({ length: n }, (_, i) => ({
			id: `ord_${wallet}_${this.orders.length + i}`,
			wallet,
			ordVersion: 3,
			status: "SUCCESS",
			amount: 100,
			currency: "BRL",
			direction: "IN" as const,
			createdAt: new Date(at + i).toISOString(),
			updatedAt: new Date(at + i).toISOString(),
			...make(i),
		}));
		this.orders.push(...made);
		this.sorted = null;
		return made;
	}

	script(...s: Script[]): void {
		this.scripts.push(...s);
	}

	async authenticate(req: Request): Promise<string | null> {
		const key = req.headers.get("x-access-key");
		const ts = req.headers.get("x-access-timestamp");
		const id = req.headers.get("x-access-request-id");
		const sig = req.headers.get("x-access-signature");
		if (key !== ACCESS_KEY) return "UNKNOWN_ACCESS_KEY";
		if (!ts || !/^\d+$/.test(ts) || Math.abs(Date.now() - Number(ts)) > 10_000) return "CLOCK_SKEW";
		if (!id || !/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id))
			return "BAD_REQUEST_ID";
		if (this.seenRequestIds.has(id)) return "REPLAY_DETECTED";
		this.seenRequestIds.add(id);
		const url = new URL(req.url);
		const bodyHash = hex(
			new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(await req.arrayBuffer()))),
		);
		const canonical = `${key}:${id}:${ts}:${req.method.toUpperCase()}:${url.pathname}${url.search}:${bodyHash}`;
		const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonical)));
		let ok = false;
		try {
			ok = secp256k1.verify(unb64(sig ?? ""), digest, this.publicKey, {
				prehash: false,
				lowS: true,
				format: this.format,
			});
		} catch {
			ok = false;
		}
		return ok ? null : "INVALID_SIGNATURE";
	}

	fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
		const req = new Request(input, init);
		if (!req.url.startsWith(BASE_URL)) throw new Error(`unexpected fetch to ${req.url}`);
		const failure = await this.authenticate(req.clone());
		this.requests.push({ url: req.url, authenticated: failure === null, ...(failure ? { reason: failure } : {}) });
		if (failure) return errorBody(401, "UNAUTHENTICATED", failure, "request authentication failed");
		const scripted = this.scripts[0];
		if (scripted) {
			const res = await scripted(req);
			if (res) {
				this.scripts.shift();
				return res;
			}
		}
		return this.list(new URL(req.url));
	};

	private list(url: URL): Response {
		const m = url.pathname.match(/^\/txengine\/v1\/wallets\/([^/]+)\/paymentOrders$/);
		if (!m) return errorBody(404, "NOT_FOUND", "NOT_FOUND", "no such route");
		const wallet = decodeURIComponent(m[1] as string);
		const filter = url.searchParams.get("filter") ?? "";
		const orderBy = url.searchParams.get("order_by") ?? "";
		const size = Math.min(100, Number(url.searchParams.get("page_size") ?? 100));
		const clauses = filter.split(" AND ").map((c) => c.match(/^(\w+)(>=|<)(.+)$/));
		if (clauses.some((c) => !c)) return errorBody(400, "INVALID_ARGUMENT", "INVALID_FILTER", "bad filter");
		let offset = 0;
		const token = url.searchParams.get("page_token");
		if (token) {
			const t = JSON.parse(atob(token)) as { offset: number; filter: string; orderBy: string };
			if (t.filter !== filter || t.orderBy !== orderBy) {
				return errorBody(400, "INVALID_ARGUMENT", "INVALID_PAGE_TOKEN", "page token expired");
			}
			offset = t.offset;
		}
		if (clauses.some((c) => c?.[1] !== "updatedAt"))
			return errorBody(400, "INVALID_ARGUMENT", "INVALID_FILTER", "field not filterable");
		this.sorted ??= this.orders
			.map((order) => ({ at: Date.parse(order.updatedAt), order }))
			.sort((a, b) => a.at - b.at || a.order.id.localeCompare(b.order.id));
		const matching = this.sorted
			.filter(
				({ at, order }) =>
					order.wallet === wallet &&
					clauses.every((c) => {
						const [, , op, value] = c as RegExpMatchArray;
						return op === ">=" ? at >= Date.parse(value as string) : at < Date.parse(value as string);
					}),
			)
			.map(({ order }) => order);
		const items = matching.slice(offset, offset + size);
		const next =
			offset + size < matching.length ? btoa(JSON.stringify({ offset: offset + size, filter, orderBy })) : null;
		return Response.json({ items, nextPageToken: next });
	}
}
