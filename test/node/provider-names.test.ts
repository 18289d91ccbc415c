/**
 * "A provider is one file": scripts/check/provider-names.mjs (run by .ci/run through
 * `npm run check:imports`) fails when a sender's name spreads past its file, the registry and
 * .dev.vars.example. These tests run it on a scratch tree, so they show it can fail.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without types.
import { problems, providerFiles } from "../../scripts/check/provider-names.mjs";

const ROOT = path.resolve(import.meta.dirname, "../..");

function tree(files: Record<string, string>): string {
	const root = mkdtempSync(path.join(tmpdir(), "names-"));
	for (const [file, text] of Object.entries(files)) {
		mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
		writeFileSync(path.join(root, file), text);
	}
	return root;
}

const REGISTRY = {
	"src/providers/index.ts": 'import { acme } from "./acme";\nconst registry = { acme };\n',
	"src/providers/acme.ts": 'export const acme = { name: "acme", secretsVariable: "ACME_WEBHOOK_SECRETS" };\n',
	".dev.vars.example": '# ACME_WEBHOOK_SECRETS=""\n',
};

describe("the provider-name check", () => {
	it("passes a sender named in its file, the registry and .dev.vars.example only", () => {
		expect(problems(tree(REGISTRY))).toEqual([]);
	});

	it("fails when a tool names a sender (a case per provider in scripts/)", () => {
		const root = tree({ ...REGISTRY, "scripts/sim/signing.ts": 'case "acme": return { "x-acme-signature": s };\n' });
		expect(problems(root)).toEqual([expect.stringContaining("acme appears in 4 non-test files (at most 3)")]);
	});

	it("counts a variable name (ACME_WEBHOOK_SECRETS) as the name, but not a longer word (acmetools)", () => {
		const root = tree({
			...REGISTRY,
			"src/env.ts": '"ACME_WEBHOOK_SECRETS"\n',
			"package.json": '{"acmetools": "1"}\n',
		});
		expect(providerFiles(root).acme).toContain("src/env.ts");
		expect(providerFiles(root).acme).not.toContain("package.json");
	});

	it("counts bench/ and scripts/, but not fixtures/ (test doubles shared by the tests and the bench)", () => {
		const root = tree({
			...REGISTRY,
			"bench/ingress.ts": 'const path = "/webhooks/acme";\n',
			"scripts/send.ts": 'const header = "x-acme-signature";\n',
			"fixtures/fake-acme.ts": "export class FakeAcme {} // acme's API, faked\n",
		});
		expect(providerFiles(root).acme).toContain("bench/ingress.ts");
		expect(providerFiles(root).acme).toContain("scripts/send.ts");
		expect(providerFiles(root).acme).not.toContain("fixtures/fake-acme.ts");
	});

	it("this repository passes: every sender in at most three non-test files", () => {
		expect(problems(ROOT)).toEqual([]);
		const counts = providerFiles(ROOT) as Record<string, string[]>;
		expect(Object.keys(counts).length).toBeGreaterThan(0);
		for (const found of Object.values(counts)) expect(found.length).toBeLessThanOrEqual(3);
	});
});
