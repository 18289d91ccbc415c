/** Configuration the tests run with (shared by vitest.config.ts and the tests themselves). */
export const TEST_VARS = {
	BLOOBANK_WEBHOOK_SECRETS:
		"whsec-test-current-0123456789abcdef0123456789abcdef,whsec-test-previous-fedcba9876543210fedcba9876543210",
	BLOOBANK_SECRET_ENCODING: "utf8",
	SIGNATURE_TOLERANCE_SECONDS: "300",
	MAX_BODY_BYTES: "65536",
	SWEEP_STALE_SECONDS: "300",
} as const;
