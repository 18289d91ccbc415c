/** Outbound calls (the alert target, the provider's API) never follow a redirect, and no URL reaches a log. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeApiVars } from "../../fixtures/fake-bloobank";
import { parseConfig, parseReconcileConfig } from "../../src/env";
import { errorMessage } from "../../src/log";
import { postAlert } from "../../src/notify";
import { ApiClient, defaultDeps } from "../../src/reconcile/client";

afterEach(() => vi.restoreAllMocks());

const redirect = () => new Response(null, { status: 302, headers: { location: "https://elsewhere.test/steal" } });

describe("outbound fetches never follow redirects", () => {
	it("an alert target answering 302 is a failed delivery, asked with redirect: manual", async () => {
		const seen: RequestInit[] = [];
		vi.spyOn(globalThis, "fetch").mockImplementation(async (_input, init) => {
			seen.push(init ?? {});
			return redirect();
		});
		const config = parseConfig({ ALERT_WEBHOOK_URL: "https://alerts.test/hook" } as never);
		await expect(postAlert(config, "test", { alert: "backlog" } as never, "k")).rejects.toThrow(/302/);
		expect(seen.map((i) => i.redirect)).toEqual(["manual"]);
	});

	it("the provider API answering 302 fails the request, asked with redirect: manual", async () => {
		const parsed = parseReconcileConfig(fakeApiVars() as never);
		if (!parsed.ok) throw new Error(parsed.error);
		const seen: RequestInit[] = [];
		const client = new ApiClient(parsed.config, {
			...defaultDeps(),
			fetch: async (_input, init) => {
				seen.push(init ?? {});
				return redirect();
			},
		});
		const res = await client.listPage("w1", { filter: "x", orderBy: "updatedAt asc", pageToken: null });
		expect(res.ok).toBe(false);
		expect(seen.every((i) => i.redirect === "manual")).toBe(true);
	});

	it("an outbound error is logged without its URL", () => {
		const err = new TypeError("fetch failed: connect ECONNREFUSED https://hooks.example/T000/B000/secret-part");
		expect(errorMessage(err)).toBe("fetch failed: connect ECONNREFUSED <url>");
	});
});
