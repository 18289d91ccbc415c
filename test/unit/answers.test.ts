import { describe, expect, it } from "vitest";
import { ANSWERS } from "../../src/ingress/answers";
import { VERIFY_FAILURES } from "../../src/providers/signature";

describe("the ingress answers table (docs/design.md invariant 9)", () => {
	it("answers 4xx only for requests that are certainly not genuine deliveries", () => {
		const fourXx = Object.entries(ANSWERS)
			.filter(([, a]) => a.status >= 400 && a.status < 500)
			.map(([ending]) => ending)
			.sort();
		expect(fourXx).toEqual(["bad_path", "too_large", "unknown_provider", ...VERIFY_FAILURES].sort());
	});

	it("never answers 429, and every 2xx is a stored delivery", () => {
		expect(Object.values(ANSWERS).some((a) => a.status === (429 as number))).toBe(false);
		const ok = Object.entries(ANSWERS)
			.filter(([, a]) => a.status === 200)
			.map(([e]) => e);
		expect(ok.sort()).toEqual(["accepted", "duplicate", "ignored", "resent"]);
	});
});
