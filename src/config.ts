/**
 * The parsed configuration's shape, and the primitives every parser uses (src/env.ts for the
 * Worker's own variables, each provider's file for its own). Imports no provider, so providers
 * may import it.
 */
import type { Cidr } from "./ingress/cidr";
import type { ProviderName } from "./providers/model";

/**
 * What everything but ingress reads: the consumer, the sweep, effects. No secret is in it, so a
 * mistyped webhook secret cannot stop the queue consumer (docs/design.md, configuration).
 */
export interface Config {
	/** Each sender's own settings, parsed by its `settings(env)` (src/providers/). */
	providerSettings: Readonly<Record<ProviderName, unknown>>;
	alertWebhookUrl: string | null;
	sweepStaleSeconds: number;
	retentionDays: number;
	dedupeRetentionDays: number;
}

/** What ingress and the admin API read on top of `Config`. */
export interface WebhookConfig extends Config {
	/** HMAC keys per provider, decoded once here; an empty list means the provider is not configured. */
	keys: Record<ProviderName, readonly Uint8Array[]>;
	toleranceSeconds: number;
	maxBodyBytes: number;
	webhookPathToken: string | null;
	adminToken: string | null;
	/** null: no allow-list. */
	allowedSourceCidrs: readonly Cidr[] | null;
	/**
	 * Variables that hold a value published in this repository or a spec (.dev.vars.example, a
	 * sender's documented test secret: each provider's publishedSecrets): refused unless the request comes to localhost.
	 */
	publishedValues: readonly string[];
}

/** A configuration problem, named by its variable (never its value). */
export class ConfigError extends Error {
	override name = "ConfigError";
	constructor(
		readonly variable: string,
		message: string,
	) {
		super(`${variable}: ${message}`);
	}
}

export function list(value: string | undefined): string[] {
	if (!value) return [];
	return value
		.split(",")
		.map((s) => s.trim())
		.filter((s) => s.length > 0);
}

export function positiveInt(
	name: string,
	value: string | undefined,
	fallback: number,
	max = Number.MAX_SAFE_INTEGER,
): number {
	if (value === undefined || value.trim() === "") return fallback;
	const n = Number(value);
	if (!Number.isSafeInteger(n) || n <= 0) throw new ConfigError(name, "must be a positive integer");
	if (n > max) throw new ConfigError(name, `must be at most ${max}`);
	return n;
}

export function optional(value: string | undefined): string | null {
	return value && value.trim() !== "" ? value.trim() : null;
}

/** An http(s) URL for outbound calls: https only, except plain http to loopback (local tests). */
export function outboundUrl(name: string, value: string): string {
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		throw new ConfigError(name, "is not a URL");
	}
	if (url.protocol === "https:") return value;
	if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return value;
	throw new ConfigError(name, "must be an https URL (plain http only to loopback)");
}

export function isLoopbackHost(hostname: string): boolean {
	return hostname === "localhost" || hostname === "[::1]" || hostname === "::1" || /^127(\.\d{1,3}){3}$/.test(hostname);
}
