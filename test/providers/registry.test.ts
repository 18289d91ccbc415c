/**
 * What the registry (src/providers/index.ts) must hold for the rest of the receiver to read it
 * without naming a sender.
 */
import { describe, expect, it } from "vitest";
import { PROVIDER_NAMES, providers, reconciledProvider } from "../../src/providers";
import type { Provider } from "../../src/providers/types";

describe("the registry", () => {
	it("at most one sender declares an api: reconciliation runs and windows are keyed by account alone", () => {
		const withApi = Object.values(providers)
			.filter((p: Provider) => p.api !== undefined)
			.map((p) => p.name);
		expect(withApi.length).toBeLessThanOrEqual(1);
		expect(reconciledProvider()?.name ?? null).toBe(withApi[0] ?? null);
	});

	it("each sender's api reads only variables its file declares", () => {
		for (const name of PROVIDER_NAMES) {
			const p: Provider = providers[name];
			if (!p.api) continue;
			const declared = new Set<string>(p.variables);
			expect(declared.has(p.api.accountsVariable)).toBe(true);
			if (p.api.privateKeyVariable) expect(declared.has(p.api.privateKeyVariable)).toBe(true);
		}
	});
});
