/** The conformance suite (test/support/conformance.ts), run for every provider of the registry. */
import { beforeEach, describe, expect, it } from "vitest";
import { PROVIDER_NAMES, providers } from "../../src/providers";
import { conformanceSuite } from "../support/conformance";
import { SENDERS } from "../support/senders";
import { resetDb } from "../support/worker";
import { TEST_SECRETS, TEST_VARS } from "../vars";

beforeEach(resetDb);

describe("every registered sender is under test", () => {
	it("has a test Sender (test/support/senders.ts SENDERS), so the suite below runs for it", () => {
		expect(SENDERS.map((s) => s.name).sort()).toEqual([...PROVIDER_NAMES].sort());
	});

	it("has its test secrets in its secrets variable (test/vars.ts TEST_VARS)", () => {
		const vars = TEST_VARS as Record<string, string>;
		for (const name of PROVIDER_NAMES)
			expect(vars[providers[name].secretsVariable], name).toBe(TEST_SECRETS[name].join(","));
	});
});

describe.each(SENDERS)("$name conformance", (sender) => conformanceSuite(sender));
