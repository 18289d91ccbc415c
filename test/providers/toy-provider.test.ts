/**
 * Adding a provider is one file plus one registry entry: a toy sender, written here as a forker
 * would write src/providers/<name>.ts, is registered and passes the whole conformance suite
 * without any other change to src/, signed by the tools' shared signer (scripts/sim/signing.ts),
 * and the simulator plays it against the Worker without any change to scripts/. Given an `api` in
 * the same file (its URLs, its own request signing, its items), reconciliation and the refresh
 * call that sender instead, again without any other change.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { signDelivery, simProviders } from "../../scripts/sim/signing";
import { ConfigError } from "../../src/config";
import { concatBytes, utf8 } from "../../src/crypto/encoding";
import worker from "../../src/index";
import { PROVIDER_NAMES, providers } from "../../src/providers";
import type { ProviderName } from "../../src/providers/model";
import {
	checkTimestamp,
	parseTimestampedHeader,
	type SignatureCheck,
	type SignatureInput,
} from "../../src/providers/signature";
import {
	epochMs,
	genericStatusRank,
	idString,
	ignoredEvent,
	isRecord,
	type ParseResult,
	type Provider,
	type ProviderApi,
	parseObject,
} from "../../src/providers/types";
import { QUEUE_NAMES, type QueueMessage, type ReconcileJob } from "../../src/queue/messages";
import { consume } from "../support/apply";
import { conformanceSuite } from "../support/conformance";
import type { Sender } from "../support/senders";
import { simulateLocally } from "../support/simulation";
import { call, type Harness, harness, resetDb, rows } from "../support/worker";

// --- what a forker writes: src/providers/toy.ts -------------------------------------------
// A registered name outside ProviderName (a forker's file declares it with
// `declare module "./model" { interface ProviderVariables { toy: ... } }`; a test cannot, as that
// would change Env for every test): the registry is what the runtime reads.
const TOY = "toy" as ProviderName;
// `X-Toy-Signature: t=<unix seconds>,v1=<hex HMAC of "{seconds}.{body}">`; envelope
// `{ id, kind, at, thing: { id, status } }`, ordered by `at`.
interface ToySettings {
	/** TOY_IGNORE_KINDS: kinds stored as ignored (shows a provider's own settings at work). */
	ignoredKinds: readonly string[];
}

function checkToySignature({ headers, nowMs, config }: SignatureInput): SignatureCheck {
	const header = headers.get("x-toy-signature");
	if (!header) return { ok: false, reason: "missing_signature" };
	const parsed = parseTimestampedHeader(header);
	if (parsed === "malformed_signature") return { ok: false, reason: parsed };
	const seconds = parsed.t;
	if (!seconds) return { ok: false, reason: "missing_timestamp" };
	const stale = checkTimestamp(seconds, 1000, nowMs, config.toleranceSeconds);
	if (stale) return { ok: false, reason: stale };
	return { ok: true, candidates: parsed.v1, signedContent: (body) => concatBytes(utf8(`${seconds}.`), body) };
}

function parseToy(body: string, _headers: Headers, settings: ToySettings): ParseResult {
	const e = parseObject(body);
	if (typeof e === "string") return { ok: false, reason: e };
	const messageId = idString(e.id);
	if (messageId === null) return { ok: false, reason: "missing_message_id" };
	const kind = typeof e.kind === "string" ? e.kind : "";
	const thing = isRecord(e.thing) ? e.thing : null;
	const id = thing ? idString(thing.id) : null;
	const version = epochMs(e.at);
	if (settings.ignoredKinds.includes(kind) || thing === null)
		return { ok: true, event: ignoredEvent(TOY, messageId, kind, "not modelled") };
	if (id === null || version === null || typeof thing.status !== "string")
		return { ok: true, event: ignoredEvent(TOY, messageId, kind, "thing without id, status or time") };
	return {
		ok: true,
		event: {
			provider: TOY,
			messageId,
			event: kind,
			attempt: null,
			attemptRef: null,
			eventAt: version,
			note: null,
			resource: { type: "thing", id, wallet: null, version, status: thing.status.toUpperCase(), data: thing },
		},
	};
}

const toy: Provider<ToySettings> = {
	name: TOY,
	label: "Toy",
	secretsVariable: "TOY_WEBHOOK_SECRETS" as never,
	variables: ["TOY_WEBHOOK_SECRETS", "TOY_IGNORE_KINDS"] as never,
	publishedSecrets: [],
	keyFromSecret: (secret) => utf8(secret),
	settings: (env) => {
		const raw = (env as unknown as Record<string, string | undefined>).TOY_IGNORE_KINDS ?? "ping";
		if (/[^a-z,.]/.test(raw)) throw new ConfigError("TOY_IGNORE_KINDS", "lowercase kinds, comma-separated");
		return { ignoredKinds: raw.split(",") };
	},
	keptHeaders: [],
	checkSignature: checkToySignature,
	parse: parseToy,
	statusRank: genericStatusRank,
	effects: {},
	lookupType: "thing",
	// How the tools play it: a scheme they already sign, its bodies, its schedule.
	sender: {
		signing: { kind: "timestamp-hex", header: "x-toy-signature", unit: "s" },
		retries: { delays: [1, 2, 4], jitter: [1, 1], fourXxPermanent: false, timeoutMs: 5_000 },
		attemptHeaders: () => ({}),
		sample: (messageId, s) =>
			JSON.stringify({
				id: messageId,
				kind: "thing.changed",
				at: new Date(s.at).toISOString(),
				thing: { id: s.id, status: s.status },
			}),
		expected: (s) => ({ type: "thing", version: s.at }),
	},
};
// -------------------------------------------------------------------------------------------

const SECRETS = ["toy-current-secret-0123456789abcdef", "toy-previous-secret-fedcba9876543210"];
const at = (version: number) => new Date(Date.parse("2026-11-01T00:00:00Z") + version * 60_000).toISOString();

const toySender: Sender = {
	name: "toy",
	secrets: SECRETS,
	timestamped: true,
	signatureHeader: "x-toy-signature",
	resourceType: "thing",
	event: (messageId, id, version, status) =>
		JSON.stringify({ id: messageId, kind: "thing.changed", at: at(version), thing: { id, status } }),
	unmodelled: (messageId) => JSON.stringify({ id: messageId, kind: "ping", at: at(1) }),
	malformed: (messageId) => JSON.stringify({ id: messageId, kind: "thing.changed", at: at(1), thing: { status: "x" } }),
	// The tools' shared signer, by the scheme the toy's file declares: no change to scripts/.
	headers: (body, o) =>
		signDelivery(TOY, o.secret ?? SECRETS[0] ?? "", o.signedBody ?? body, o.messageId, o.nowMs ?? Date.now()),
};

const registry = providers as Record<string, Provider>;
beforeAll(() => {
	registry.toy = toy;
});
afterAll(() => {
	delete registry.toy;
});
beforeEach(resetDb);

const TOY_VARS = { TOY_WEBHOOK_SECRETS: SECRETS.join(",") } as never;

describe("a provider registered by one registry entry passes the conformance suite", () => {
	conformanceSuite(toySender, TOY_VARS);
});

describe("the tools play a provider registered by one registry entry", () => {
	const adminToken = "toy-admin-token-0123456789abcdef0123456789";

	it("the simulator lists it and plays 20 orders, duplicates, shuffled: zero mismatches", async () => {
		expect(simProviders()).toContain(TOY);
		const h = harness({ ...(TOY_VARS as object), ADMIN_TOKEN: adminToken });
		const report = await simulateLocally(h, {
			provider: TOY,
			secret: SECRETS[1] ?? "",
			adminToken,
			orders: 20,
			concurrency: 4,
			duplicateRate: 0.3,
			seed: 5,
			timeScale: 1000,
		});
		expect(report.verified).toBe(true);
		expect(report.acked).toBe(report.deliveries + report.duplicatesSent);
		expect(report.mismatches).toEqual([]);
	});

	it("a delivery signed with a secret the receiver does not hold is refused (the signer is really checked)", async () => {
		const h = harness(TOY_VARS);
		const body = toySender.event("toy-msg-1", "t1", 1, "open");
		const headers = await toySender.headers(body, { messageId: "toy-msg-1", secret: "not-a-toy-secret-0123456789" });
		const res = await call(h, new Request("https://receiver.test/webhooks/toy", { method: "POST", headers, body }));
		expect(res.status).toBe(401);
	});
});

// --- a forker's sender with an API: the same file, plus `api` ------------------------------
// Its list is `GET {base}/accounts/{account}/things`, one thing `.../things/{id}`, each request
// carrying a bearer token; a thing's version is its `at` (ms).
interface ToyCredentials {
	base: string;
	token: string;
}
const toyApi: ProviderApi<ToyCredentials, ToySettings> = {
	type: "thing",
	// A thing's id is unique across accounts: it names no wallet, as parseToy keys it.
	accountScoped: false,
	accountsVariable: "TOY_ACCOUNTS" as never,
	credentials: (env) => {
		const vars = env as unknown as Record<string, string | undefined>;
		if (!vars.TOY_API_TOKEN) return { ok: false, error: "TOY_API_TOKEN is not set" };
		return { ok: true, value: { base: vars.TOY_API_BASE ?? "https://toy.test/v2", token: vars.TOY_API_TOKEN } };
	},
	listUrl: (c, account) => new URL(`${c.base}/accounts/${encodeURIComponent(account)}/things`),
	itemUrl: (c, account, id) =>
		new URL(`${c.base}/accounts/${encodeURIComponent(account)}/things/${encodeURIComponent(id)}`),
	signedHeaders: async (c) => new Headers({ authorization: `Bearer ${c.token}` }),
	// Keyed as parseToy keys it: a thing's id is unique across accounts, so it names no wallet.
	snapshot: (item) => {
		if (!isRecord(item) || !idString(item.id) || typeof item.status !== "string") return null;
		const version = epochMs(item.at);
		if (version === null) return null;
		return {
			type: "thing",
			id: String(item.id),
			wallet: null,
			version,
			status: item.status.toUpperCase(),
			data: item,
		};
	},
	// Events older than an hour are checked against the API before they apply.
	refreshAfterMs: () => 60 * 60_000,
};
// -------------------------------------------------------------------------------------------

describe("a sender that declares an api is the one reconciliation and the refresh call", () => {
	const adminToken = "toy-admin-token-0123456789abcdef0123456789";
	const TOKEN = "toy-api-token-0123456789";
	const things = [
		{ id: "t1", status: "open", at: at(1) },
		{ id: "t2", status: "done", at: at(2) },
	];
	const seen: { path: string; authorization: string | null }[] = [];
	const fakeToyApi = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
		const req = new Request(input, init);
		const url = new URL(req.url);
		seen.push({ path: url.pathname, authorization: req.headers.get("authorization") });
		if (req.headers.get("authorization") !== `Bearer ${TOKEN}`) return new Response(null, { status: 401 });
		if (url.pathname === "/v2/accounts/acct-1/things") return Response.json({ items: things, nextPageToken: null });
		const one = things.find((t) => url.pathname === `/v2/accounts/acct-1/things/${t.id}`);
		return one ? Response.json({ ...one, status: "closed", at: at(3) }) : new Response(null, { status: 404 });
	};
	const withoutApi = (p: Provider): Provider => {
		const { api: _, ...rest } = p;
		return rest;
	};
	const before = { ...registry };
	beforeAll(() => {
		// The template's sender loses its `api`; the toy's file gains one. Nothing else changes.
		for (const [name, p] of Object.entries(registry)) registry[name] = withoutApi(p);
		registry.toy = { ...toy, api: toyApi as ProviderApi };
	});
	afterAll(() => {
		for (const name of Object.keys(registry)) delete registry[name];
		Object.assign(registry, before);
	});
	beforeEach(() => {
		seen.length = 0;
		vi.spyOn(globalThis, "fetch").mockImplementation(fakeToyApi);
	});
	afterEach(() => vi.restoreAllMocks());

	const VARS = {
		...(TOY_VARS as object),
		TOY_API_TOKEN: TOKEN,
		TOY_ACCOUNTS: "acct-1",
		ADMIN_TOKEN: adminToken,
	} as never;
	const post = (h: Harness, path: string) =>
		call(
			h,
			new Request(`https://receiver.test${path}`, {
				method: "POST",
				headers: { authorization: `Bearer ${adminToken}` },
			}),
		);

	/** A signed toy webhook announcing `id` at `version`. */
	async function deliver(h: Harness, messageId: string, id: string, version: number, status: string) {
		const body = toySender.event(messageId, id, version, status);
		const headers = await toySender.headers(body, { messageId });
		const init = { method: "POST", headers: { "content-type": "application/json", ...headers }, body };
		return call(h, new Request("https://receiver.test/webhooks/toy", init));
	}

	/** Starts a run and executes each window job it queued, one invocation each. */
	async function reconcile(h: Harness) {
		expect((await post(h, "/admin/reconcile")).status).toBe(202);
		for (const job of h.reconcile.sent) {
			const batch = createMessageBatch<ReconcileJob>(QUEUE_NAMES.reconcile, [
				{ id: "r-1", timestamp: new Date(), attempts: 1, body: job as ReconcileJob },
			]);
			const ctx = createExecutionContext();
			await worker.queue(batch, h.env, ctx);
			await getQueueResult(batch, ctx);
		}
	}

	it("a reconciliation run lists the toy's things through its URLs and token, and applies them", async () => {
		const h = harness(VARS);
		await reconcile(h);
		expect(seen.length).toBeGreaterThan(0);
		expect(seen.every((r) => r.path === "/v2/accounts/acct-1/things" && r.authorization === `Bearer ${TOKEN}`)).toBe(
			true,
		);
		await consume(h, h.events.sent.filter((m) => m.kind === "snapshot") as QueueMessage[]);
		expect(await rows("SELECT provider, type, wallet, id, status, source FROM resources ORDER BY id")).toEqual([
			{ provider: "toy", type: "thing", wallet: "", id: "t1", status: "OPEN", source: "reconcile" },
			{ provider: "toy", type: "thing", wallet: "", id: "t2", status: "DONE", source: "reconcile" },
		]);
		const [run] = await rows<{ status: string }>("SELECT status FROM reconcile_runs");
		expect(run?.status).toBe("done");
	});

	// The toy's parse keys a thing with wallet null, and so must its api.snapshot (ProviderApi):
	// the listed thing then updates the webhook's row instead of becoming a second one.
	it("a thing received by webhook and then listed by reconciliation stays one resource", async () => {
		const h = harness(VARS);
		expect((await deliver(h, "toy-hook-1", "t1", 1, "open")).status).toBe(200);
		await consume(h, [...h.events.sent]);
		h.events.sent.length = 0;
		await reconcile(h);
		const resent = h.events.sent.filter((m) => m.kind === "snapshot") as QueueMessage[];
		// t1 is stored (at the listed version or, refreshed as an old event, newer): only t2 drifted.
		expect(new Set(resent.map((m) => (m.kind === "snapshot" ? m.resource.id : null)))).toEqual(new Set(["t2"]));
		await consume(h, resent);
		expect(await rows("SELECT id, wallet, status FROM resources WHERE id = 't1'")).toHaveLength(1);
	});

	it("the refresh fetches one toy thing; the template's sender, declaring no api now, has none", async () => {
		const h = harness(VARS);
		const res = await post(h, "/admin/resources/toy/thing/t2/refresh?wallet=acct-1");
		expect(res.status).toBe(202);
		expect(await res.json()).toMatchObject({ queued: true, wallet: "acct-1", id: "t2", status: "CLOSED" });
		expect(seen).toEqual([{ path: "/v2/accounts/acct-1/things/t2", authorization: `Bearer ${TOKEN}` }]);
		await consume(h, h.events.sent.filter((m) => m.kind === "snapshot") as QueueMessage[]);
		expect(await rows("SELECT id, status FROM resources")).toEqual([{ id: "t2", status: "CLOSED" }]);
		const other = PROVIDER_NAMES.find((n) => n !== TOY) ?? "";
		const otherType = registry[other]?.lookupType ?? "";
		seen.length = 0;
		expect((await post(h, `/admin/resources/${other}/${otherType}/x/refresh?wallet=w`)).status).toBe(404);
		expect(seen).toEqual([]);
	});

	it("an old toy event is checked against the toy's only account before it applies, and keyed with no wallet", async () => {
		const h = harness(VARS);
		expect((await deliver(h, "toy-old-1", "t2", 2, "done")).status).toBe(200);
		await consume(h, [...h.events.sent]);
		expect(seen).toEqual([{ path: "/v2/accounts/acct-1/things/t2", authorization: `Bearer ${TOKEN}` }]);
		expect(await rows("SELECT wallet, id, status FROM resources")).toEqual([
			{ wallet: "", id: "t2", status: "CLOSED" },
		]);
		expect(await rows("SELECT status FROM deliveries")).toEqual([{ status: "stale" }]);
	});

	it("a stored thing names no wallet: the refresh asks the toy's only account, and with several refuses to guess", async () => {
		const h = harness(VARS);
		const first = await post(h, "/admin/resources/toy/thing/t1/refresh?wallet=acct-1");
		expect(first.status).toBe(202);
		await consume(h, h.events.sent.filter((m) => m.kind === "snapshot") as QueueMessage[]);
		seen.length = 0;
		const again = await post(h, "/admin/resources/toy/thing/t1/refresh");
		expect(again.status).toBe(202);
		expect(await again.json()).toMatchObject({ wallet: "acct-1", id: "t1" });
		expect(seen.map((r) => r.path)).toEqual(["/v2/accounts/acct-1/things/t1"]);

		const two = harness({ ...(VARS as object), TOY_ACCOUNTS: "acct-1,acct-2" } as never);
		seen.length = 0;
		const refused = await post(two, "/admin/resources/toy/thing/t1/refresh");
		expect(refused.status).toBe(400);
		expect(seen).toEqual([]);
	});
});
