#!/usr/bin/env node
// Fails when a provider's name appears in more than three non-test files: adding or removing a
// sender must stay "its file + its registry line + its line in .dev.vars.example", everything else
// reading the registry (src/providers/index.ts). A name counts as a word in any case (`acme`,
// `ACME_WEBHOOK_SECRETS`, `X-Acme-Signature`), not inside another word (a signature scheme's
// reference library may carry a sender's name in its package name: it serves every sender of that
// scheme). docs/ and README.md document the senders and are not counted, nor is this file.
// fixtures/ holds test doubles shared by the tests and the bench (a fake of a
// sender's API is that sender's by nature): test code, not counted; the bench reaches the fake
// through fixtures/fake-api.ts, the one place a fork points at its own. Run by .ci/run
// (`npm run check:imports`).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

export const LIMIT = 3;

const SCANNED = ["src", "scripts", "bench", "wrangler.toml", "package.json", ".dev.vars.example"];

function files(path) {
	let stat;
	try {
		stat = statSync(path);
	} catch {
		return [];
	}
	if (!stat.isDirectory()) return [path];
	// Benchmark output is generated and git-ignored: what a run printed is not where a name is written.
	if (path.endsWith(join("bench", "results"))) return [];
	return readdirSync(path).flatMap((name) => files(join(path, name)));
}

/** The registry's names: the keys of `const registry = { a, b, c }` (src/providers/index.ts). */
export function registeredNames(root) {
	const index = readFileSync(join(root, "src/providers/index.ts"), "utf8");
	const m = /\bconst registry\b[^=]*=\s*\{([^}]*)\}/.exec(index);
	if (!m) throw new Error("src/providers/index.ts: no `const registry = { ... }`");
	return m[1]
		.split(",")
		.map((s) => s.split(":")[0].trim())
		.filter(Boolean);
}

/** For each registered name, the scanned files that name it. */
export function providerFiles(root) {
	const self = join(root, "scripts/check/provider-names.mjs");
	const scanned = SCANNED.flatMap((p) => files(join(root, p))).filter((f) => f !== self);
	const out = {};
	for (const name of registeredNames(root)) {
		const word = new RegExp(`(?<![a-z0-9])${name}(?![a-z0-9])`, "i");
		out[name] = scanned.filter((f) => word.test(readFileSync(f, "utf8"))).map((f) => relative(root, f));
	}
	return out;
}

export function problems(root) {
	const out = [];
	for (const [name, found] of Object.entries(providerFiles(root))) {
		if (found.length > LIMIT)
			out.push(`${name} appears in ${found.length} non-test files (at most ${LIMIT}):\n  ${found.join("\n  ")}`);
	}
	return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const root = resolve(new URL("../..", import.meta.url).pathname);
	const found = problems(root);
	if (found.length > 0) {
		console.error(found.join("\n"));
		process.exit(1);
	}
	const counts = Object.entries(providerFiles(root)).map(([n, f]) => `${n} ${f.length}`);
	console.log(`provider names: ${counts.join(", ")} non-test files (limit ${LIMIT})`);
}
