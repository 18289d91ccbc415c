/** Configuration the tests run with (shared by vitest.config.ts and the tests themselves). */
import type { ProviderName } from "../src/providers/model";

/**
 * Two secrets per sender (current and previous, for rotation). A sender added to the registry
 * fails the type check here until it has its pair, and test/providers/conformance.test.ts until
 * TEST_VARS below sets its secrets variable to them.
 */
export const TEST_SECRETS = {
	bloobank: [
		"whsec-test-current-0123456789abcdef0123456789abcdef",
		"whsec-test-previous-fedcba9876543210fedcba9876543210",
	],
	bold: ["bold-test-current-0123456789abcdef", "bold-test-previous-fedcba9876543210"],
	pazy: ["pazy-test-current-0123456789abcdef", "pazy-test-previous-fedcba9876543210"],
	standard: [
		"whsec_Y3VycmVudC1zdGFuZGFyZC10ZXN0LXNlY3JldC0zMmI=",
		"whsec_cHJldmlvdXMtc3RhbmRhcmQtc2VjcmV0LTMyYnl0ZXM=",
	],
} as const satisfies Record<ProviderName, readonly [string, string]>;

/**
 * Every configuration name is set here, empty when unset, so a developer's local .dev.vars (which
 * wrangler would also load) cannot change what the tests see.
 */
export const TEST_VARS = {
	WEBHOOK_PATH_TOKEN: "",
	ADMIN_TOKEN: "",
	ALERT_WEBHOOK_URL: "",
	ALLOWED_SOURCE_CIDRS: "",
	BLOOBANK_ACCESS_KEY: "",
	BLOOBANK_PRIVATE_KEY: "",
	BLOOBANK_WALLETS: "",
	RETENTION_DAYS: "30",
	DEDUPE_RETENTION_DAYS: "90",
	BLOOBANK_WEBHOOK_SECRETS: TEST_SECRETS.bloobank.join(","),
	BLOOBANK_SECRET_ENCODING: "utf8",
	BOLD_WEBHOOK_SECRETS: TEST_SECRETS.bold.join(","),
	BOLD_SUPPORTED_MAJOR_VERSIONS: "1",
	PAZY_WEBHOOK_SECRETS: TEST_SECRETS.pazy.join(","),
	STANDARD_WEBHOOK_SECRETS: TEST_SECRETS.standard.join(","),
	SIGNATURE_TOLERANCE_SECONDS: "300",
	MAX_BODY_BYTES: "65536",
	SWEEP_STALE_SECONDS: "300",
};
