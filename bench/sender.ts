/**
 * The sender every benchmark drives: the registry's first (src/providers/index.ts), which the tools
 * and the console already take as the default. Paths, variables, bodies, signatures, resource types
 * and labels all come from its registry entry, so no bench file names a provider and a fork that
 * lists its own sender first benchmarks it unchanged. Imported by the drivers (Node) and by the
 * bench Workers (workerd): nothing here may need Node.
 */
import { envelope, registered, signDelivery } from "../scripts/sim/signing";
import { keptHeadersJson, PROVIDER_NAMES } from "../src/providers";
import type { Provider, SampleState } from "../src/providers/types";

const first = PROVIDER_NAMES[0];
if (first === undefined) throw new Error("src/providers/index.ts lists no provider");

export const BENCH_SENDER: Provider = registered(first);

/** Where the bench's deliveries go on a receiver. */
export const BENCH_PATH = `/webhooks/${BENCH_SENDER.name}`;

/**
 * The secret the bench's receiver holds and the bench signs with. Base64 (of 32 bytes) as well as
 * plain text, so it is a valid key whichever way the sender decodes its secrets (its UTF-8 bytes,
 * or their base64 decoding: docs/providers.md, each sender's signature section).
 */
export const BENCH_SECRET = "YmVuY2gtc2VjcmV0LTAxMjM0NTY3ODlhYmNkZWYwMTI=";

/** A secret the receiver does not hold: its MACs are well formed and wrong. */
export const WRONG_SECRET = "bm90LXRoZS1iZW5jaC1zZWNyZXQtMDEyMzQ1Njc4OWE=";

/** The variables that configure the bench's sender on a bench Worker (its other settings keep their defaults). */
export const BENCH_SENDER_VARS: Readonly<Record<string, string>> = { [BENCH_SENDER.secretsVariable]: BENCH_SECRET };

export interface BenchDelivery {
	body: string;
	/** Its signature headers and its attempt headers, as the sender sends them. */
	headers: Record<string, string>;
}

/** The bench's sender announcing `state` in message `messageId`, signed with `secret` at `nowMs`. */
export async function benchDelivery(
	messageId: string,
	state: SampleState,
	nowMs = Date.now(),
	secret = BENCH_SECRET,
): Promise<BenchDelivery> {
	const body = envelope(BENCH_SENDER.name, messageId, state);
	return { body, headers: await signDelivery(BENCH_SENDER.name, secret, body, messageId, nowMs) };
}

/** The headers of the same delivery sent again at `nowMs` (a redelivery: the body unchanged, the signature fresh). */
export function signedAgain(messageId: string, body: string, nowMs: number): Promise<Record<string, string>> {
	return signDelivery(BENCH_SENDER.name, BENCH_SECRET, body, messageId, nowMs);
}

/** A state of one of the bench's resources; what the bench does not vary is fixed. */
export function benchState(id: string, version: number, status: string, at: number, amount = 100): SampleState {
	return { id, version, status, amount, currency: "BRL", direction: "IN", at };
}

/** The resource type the receiver keeps the bench's resources under. */
export const BENCH_RESOURCE_TYPE = BENCH_SENDER.sender.expected(benchState("r", 1, "SUCCESS", 0)).type;

/**
 * What ingress stores of `delivery` besides its body: the event name its sender's parser reads and
 * the headers that parser needs again (the consumer re-parses with them), or null when unparsable.
 */
export function storedAs(
	delivery: BenchDelivery,
	env: Parameters<Provider["settings"]>[0],
): { event: string; headers: string | null } | null {
	const headers = new Headers(delivery.headers);
	const parsed = BENCH_SENDER.parse(delivery.body, headers, BENCH_SENDER.settings(env));
	return parsed.ok ? { event: parsed.event.event, headers: keptHeadersJson(BENCH_SENDER, headers) } : null;
}
