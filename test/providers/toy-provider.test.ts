/**
 * Adding a provider is one file plus one registry entry: a toy sender, written here as a forker
 * would write src/providers/<name>.ts, is registered and passes the whole conformance suite
 * without any other change to src/.
 */
import { afterAll, beforeAll, beforeEach, describe } from "vitest";
import { ConfigError } from "../../src/config";
import { concatBytes, hexToBytes, utf8 } from "../../src/crypto/encoding";
import { providers } from "../../src/providers";
import type { ProviderName } from "../../src/providers/model";
import { checkTimestamp, type SignatureCheck, type SignatureInput } from "../../src/providers/signature";
import {
	epochMs,
	genericStatusRank,
	idString,
	ignoredEvent,
	isRecord,
	type ParseResult,
	type Provider,
	parseObject,
} from "../../src/providers/types";
import { hmacHex } from "../support/bloobank";
import { conformanceSuite } from "../support/conformance";
import type { Sender } from "../support/senders";
import { resetDb } from "../support/worker";

// --- what a forker writes: src/providers/toy.ts -------------------------------------------
// A registered name outside ProviderName (a forker adds it there): the registry is what the runtime reads.
const TOY = "toy" as ProviderName;
// `X-Toy-Signature: <unix seconds>.<hex HMAC of "{seconds}.{body}">`; envelope
// `{ id, kind, at, thing: { id, status } }`, ordered by `at`.
interface ToySettings {
	/** TOY_IGNORE_KINDS: kinds stored as ignored (shows a provider's own settings at work). */
	ignoredKinds: readonly string[];
}

function checkToySignature({ headers, nowMs, config }: SignatureInput): SignatureCheck {
	const header = headers.get("x-toy-signature");
	const [seconds, hex] = header?.split(".", 2) ?? [];
	if (!seconds || !hex) return { ok: false, reason: "missing_signature" };
	const stale = checkTimestamp(seconds, 1000, nowMs, config.toleranceSeconds);
	if (stale) return { ok: false, reason: stale };
	const mac = /^[0-9a-f]{64}$/.test(hex) ? hexToBytes(hex) : null;
	return { ok: true, candidates: mac ? [mac] : [], signedContent: (body) => concatBytes(utf8(`${seconds}.`), body) };
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
			eventAt: null,
			note: null,
			resource: { type: "thing", id, wallet: null, version, status: thing.status.toUpperCase(), data: thing },
		},
	};
}

const toy: Provider<ToySettings> = {
	name: TOY,
	secretsVariable: "TOY_WEBHOOK_SECRETS" as never,
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
	async headers(body, o) {
		const seconds = String(Math.floor((o.nowMs ?? Date.now()) / 1000));
		return {
			"x-toy-signature": `${seconds}.${await hmacHex(o.secret ?? SECRETS[0] ?? "", `${seconds}.${o.signedBody ?? body}`)}`,
		};
	},
};

const registry = providers as Record<string, Provider>;
beforeAll(() => {
	registry.toy = toy;
});
afterAll(() => {
	delete registry.toy;
});
beforeEach(resetDb);

describe("a provider registered by one registry entry passes the conformance suite", () => {
	conformanceSuite(toySender, { TOY_WEBHOOK_SECRETS: SECRETS.join(",") } as never);
});
