/// <reference types="vite/types/importMeta.d.ts" />
import { describe, expect, it } from "vitest";
import { checkTarget, secretFlagError, secretFrom } from "../../scripts/sim/cli";

/** Vite's `?raw` imports are strings. */
const text = (files: Record<string, unknown>) => files as Record<string, string>;
const clis = text(import.meta.glob("../../scripts/*.ts", { query: "?raw", import: "default", eager: true }));
const devScript = Object.values(
	text(import.meta.glob("../../scripts/dev.mjs", { query: "?raw", import: "default", eager: true })),
)[0] as string;

describe("the tools handle secrets carefully", () => {
	it.each([
		["http://localhost:8787", true],
		["http://127.0.0.1:8787/", true],
		["http://[::1]:8787", true],
		["http://dev.localhost:8787", true],
		["https://receiver.example.workers.dev", true],
		["http://receiver.example.workers.dev", false],
		["http://192.168.1.10:8787", false],
		["http://127.example.com", false],
		["ftp://localhost", false],
		["not a url", false],
	])("target %s allowed: %s (plain http only to loopback)", (url, ok) => {
		expect(checkTarget(url).ok).toBe(ok);
	});

	it.each([["--secret", "x"], ["--secret=x"], ["--admin-token", "t"], ["--path-token=p"]])(
		"refuses a secret passed as a flag: %s",
		(...argv) => {
			expect(secretFlagError(argv)).toMatch(/environment or \.dev\.vars/);
		},
	);

	it("takes secrets from the environment first, then .dev.vars", () => {
		expect(secretFrom("ADMIN_TOKEN", { ADMIN_TOKEN: "from-env" }, { ADMIN_TOKEN: "from-file" })).toBe("from-env");
		expect(secretFrom("ADMIN_TOKEN", { ADMIN_TOKEN: "" }, { ADMIN_TOKEN: "from-file" })).toBe("from-file");
		expect(secretFrom("ADMIN_TOKEN", {}, {})).toBeNull();
	});

	it("no command-line tool declares a flag for a secret, and each checks its target and flags", () => {
		expect(Object.keys(clis).length).toBeGreaterThan(2);
		for (const [file, code] of Object.entries(clis)) {
			expect(code, file).not.toMatch(/^\s*"?[\w-]*(secret|token|private)[\w-]*"?\s*:\s*\{\s*type:/im);
			if (/parseArgs\(/.test(code)) {
				expect(code, file).toMatch(/secretFlagError\(/);
				if (/--url|url:/.test(code)) expect(code, file).toMatch(/checkTarget\(/);
			}
		}
	});

	it("npm run dev creates .dev.vars readable by its owner only, never over an existing one", () => {
		// scripts/dev.mjs runs in Node; this checks the call that creates the file.
		expect(devScript).toMatch(/writeFileSync\(\s*"\.dev\.vars",.*mode:\s*0o600.*flag:\s*"wx"/);
		expect(devScript).not.toMatch(/copyFileSync/);
	});
});
