/**
 * The registry: adding a provider is writing its file and listing it here. Configuration, routes,
 * the consumer, the console and the tools read the senders from here, and nowhere else names one.
 */

import type { EffectSeed } from "../effects/rules";
import { bloobank } from "./bloobank";
import { bold } from "./bold";
import type { ProviderName, ProviderVariable, ProviderVariables } from "./model";
import { pazy } from "./pazy";
import { type VerifyInput, verifySigned } from "./signature";
import { standard } from "./standard";
import type { Provider, ProviderApi, ResourceSnapshot, VerifyResult } from "./types";

/** The senders, as their files export them (scripts/check/provider-names.mjs reads these names). */
const registry = { bloobank, bold, pazy, standard };

/** The one list of senders: its type requires one entry per name the provider files declare. */
export const providers: { readonly [N in ProviderName]: Provider<unknown, N> } = registry;

/**
 * never while each provider's `variables` lists every variable its file declares in
 * `ProviderVariables` (a declared one left out would escape the `[vars]` check of wrangler.toml).
 * Needs the provider files to end in `satisfies Provider<...>`, not an annotation, so the list
 * keeps its literal names. Checked by test/wiring/names.test.ts through env.ts UnlistedEnvVars.
 */
export type UnlistedProviderVariables = {
	[N in ProviderName]: Exclude<ProviderVariables[N], (typeof registry)[N]["variables"][number]>;
}[ProviderName];

/** The senders' names, in registry order (the first is the tools' and the console's default). */
export const PROVIDER_NAMES = Object.keys(providers) as ProviderName[];

/** Every variable some sender reads. */
export const PROVIDER_VARIABLES: readonly ProviderVariable[] = Object.values(providers).flatMap(
	(p: Provider) => p.variables,
);

/**
 * The sender reconciliation calls: the one that declares an `api` (at most one does; runs and
 * windows are keyed by account alone). Null: reconciliation and the refresh are off.
 */
export function reconciledProvider(): (Provider & { api: ProviderApi }) | null {
	const withApi = Object.values(providers).filter((p: Provider) => p.api !== undefined);
	return (withApi[0] as (Provider & { api: ProviderApi }) | undefined) ?? null;
}

export function getProvider(name: string): Provider | null {
	return Object.hasOwn(providers, name) ? providers[name as ProviderName] : null;
}

/** Both signature steps at once (tests, tools); ingress runs them apart, reading the body between. */
export function verifyDelivery(provider: Provider, input: VerifyInput): Promise<VerifyResult> {
	return verifySigned(provider.checkSignature(input), input.body, input.keys);
}

/** The effects a snapshot implies: only its own provider's rules for its type can fire. */
export function effectsFor(provider: Provider, r: ResourceSnapshot): EffectSeed[] {
	const rule = Object.hasOwn(provider.effects, r.type) ? provider.effects[r.type] : undefined;
	return rule ? rule(r) : [];
}

/** The headers a provider's parse() reads, as stored with the delivery (JSON), or null. */
export function keptHeadersJson(provider: Provider, headers: Headers): string | null {
	const kept: Record<string, string> = {};
	for (const name of provider.keptHeaders) {
		const value = headers.get(name);
		if (value !== null) kept[name] = value.slice(0, 200);
	}
	return Object.keys(kept).length > 0 ? JSON.stringify(kept) : null;
}

export function storedHeaders(json: string | null): Headers {
	const headers = new Headers();
	if (json === null) return headers;
	try {
		for (const [k, v] of Object.entries(JSON.parse(json) as Record<string, unknown>)) {
			if (typeof v === "string") headers.set(k, v);
		}
	} catch {
		// A stored header blob we cannot read parses as if no header was sent.
	}
	return headers;
}
