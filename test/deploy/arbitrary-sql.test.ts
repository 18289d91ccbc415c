/// <reference types="vite/types/importMeta.d.ts" />
import { describe, expect, it } from "vitest";
import { call, harness, rows } from "../support/worker";

/** Vite's `?raw` imports are strings. */
const text = (files: Record<string, unknown>) => files as Record<string, string>;

// The files as text, bundled by Vite at test time (the tests run inside workerd, without a file system).
const benchConfigs = text(
	import.meta.glob("../../bench/wrangler.*.toml", {
		query: "?raw",
		import: "default",
		eager: true,
	}),
);
const benchWorkers = text(
	import.meta.glob("../../bench/*.worker.ts", {
		query: "?raw",
		import: "default",
		eager: true,
	}),
);
const benchDrivers = text(
	import.meta.glob(["../../bench/*.ts", "!../../bench/*.worker.ts"], {
		query: "?raw",
		import: "default",
		eager: true,
	}),
);
const sources = text(import.meta.glob("../../src/**/*.{ts,tsx}", { query: "?raw", import: "default", eager: true }));
const deployConfig = Object.values(
	text(import.meta.glob("../../wrangler.toml", { query: "?raw", import: "default", eager: true })),
)[0] as string;

const field = (toml: string, name: string) =>
	[...toml.matchAll(new RegExp(`^${name}\\s*=\\s*"([^"]*)"`, "gm"))].map((m) => m[1]);

describe("nothing deployable runs arbitrary SQL", () => {
	it("the deployed Worker has no setup route: a request carrying SQL changes nothing", async () => {
		const h = harness({ ADMIN_TOKEN: "admin-test-token-0123456789abcdef0123" });
		const sql = JSON.stringify({ queries: ["CREATE TABLE pwned (x INTEGER)"] });
		for (const path of ["/__bench/setup", "/setup", "/__bench/d1", "/admin/setup", "/admin/sql"]) {
			for (const authorization of [null, "Bearer admin-test-token-0123456789abcdef0123"]) {
				const headers: Record<string, string> = authorization ? { authorization } : {};
				const res = await call(h, new Request(`https://receiver.test${path}`, { method: "POST", headers, body: sql }));
				// Without the token, /admin/* answers 401 before routing.
				expect(authorization || !path.startsWith("/admin/") ? [404] : [401]).toContain(res.status);
			}
		}
		expect(await rows("SELECT name FROM sqlite_master WHERE name = 'pwned'")).toEqual([]);
	});

	it("the benchmark Workers' setup routes live only under bench-only configurations with their own names", () => {
		expect(Object.keys(benchConfigs).length).toBeGreaterThan(0);
		expect(field(deployConfig, "main")).toEqual(["src/index.ts"]);
		const deployedNames = field(deployConfig, "name");
		const deployedDatabases = field(deployConfig, "database_name");
		for (const [file, toml] of Object.entries(benchConfigs)) {
			for (const name of field(toml, "name")) expect(name, file).toMatch(/^bench-/);
			for (const db of field(toml, "database_name")) expect(db, file).toMatch(/^bench-/);
			for (const name of field(toml, "name")) expect(deployedNames).not.toContain(name);
			for (const db of field(toml, "database_name")) expect(deployedDatabases).not.toContain(db);
		}
		// No benchmark starts a Worker with the deployable configuration.
		expect(Object.keys(benchDrivers).length).toBeGreaterThan(0);
		for (const [file, code] of Object.entries(benchDrivers)) expect(code, file).not.toMatch(/["']wrangler\.toml["']/);
		// Each bench Worker that takes SQL over HTTP refuses to unless its bench configuration says so.
		const takingSql = Object.entries(benchWorkers).filter(([, code]) => /setup/.test(code));
		expect(takingSql.length).toBeGreaterThan(0);
		for (const [file, code] of takingSql) expect(code, file).toMatch(/BENCH_ONLY/);
		for (const [file, toml] of Object.entries(benchConfigs)) {
			const main = field(toml, "main")[0] ?? "";
			const worker = benchWorkers[`../../bench/${main}`];
			if (worker && /setup/.test(worker)) expect(toml, file).toMatch(/^BENCH_ONLY\s*=\s*"1"/m);
		}
	});

	it("no deployable module reaches into bench/ or test/, or serves a bench route", () => {
		expect(Object.keys(sources).length).toBeGreaterThan(10);
		for (const [file, code] of Object.entries(sources)) {
			expect(code, file).not.toMatch(/from\s+["'](\.\.\/)+(bench|test)\//);
			expect(code, file).not.toMatch(/__bench/);
		}
	});
});
