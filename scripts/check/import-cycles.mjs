#!/usr/bin/env node
// Fails when src/ has an import cycle (type-only imports included: they still tie modules together
// for a reader), when src/, bench/ or scripts/ import test/, when src/ imports fixtures/, or when a
// file in src/ outside src/db/ prepares a D1 statement: each table's SQL lives in its module there.
// Run by .ci/run (`npm run check:imports`).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(dirname(new URL(import.meta.url).pathname), "../..");
const files = (dir) =>
	readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		return statSync(path).isDirectory() ? files(path) : /\.(ts|tsx|mjs)$/.test(name) ? [path] : [];
	});

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']/g;
function imports(file) {
	const out = [];
	for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
		const spec = m[1];
		if (!spec.startsWith(".")) continue;
		const base = resolve(dirname(file), spec);
		const candidates = [base, `${base}.ts`, `${base}.tsx`, join(base, "index.ts")];
		const hit = candidates.find((c) => {
			try {
				return statSync(c).isFile();
			} catch {
				return false;
			}
		});
		if (hit) out.push(hit);
	}
	return out;
}

const problems = [];
for (const dir of ["src", "bench", "scripts"]) {
	for (const file of files(join(root, dir))) {
		for (const target of imports(file)) {
			const to = relative(root, target);
			if (to.startsWith("test/") || (dir === "src" && to.startsWith("fixtures/")))
				problems.push(`${relative(root, file)} imports ${to}`);
		}
	}
}

// One module per table owns every statement on it (src/db/<table>.ts); feature folders call it.
for (const file of files(join(root, "src"))) {
	const path = relative(root, file);
	if (path.startsWith("src/db/")) continue;
	const lines = readFileSync(file, "utf8").split("\n");
	lines.forEach((line, i) => {
		if (line.includes(".prepare("))
			problems.push(`${path}:${i + 1} prepares SQL outside src/db/ (move it to its table's module)`);
	});
}

const graph = new Map(files(join(root, "src")).map((f) => [f, imports(f)]));
const state = new Map();
const stack = [];
function visit(node) {
	state.set(node, "open");
	stack.push(node);
	for (const next of graph.get(node) ?? []) {
		if (state.get(next) === "open") {
			const cycle = stack.slice(stack.indexOf(next)).concat(next);
			problems.push(`cycle: ${cycle.map((f) => relative(root, f)).join(" -> ")}`);
		} else if (!state.has(next)) visit(next);
	}
	stack.pop();
	state.set(node, "done");
}
for (const node of graph.keys()) if (!state.has(node)) visit(node);

if (problems.length > 0) {
	console.error(problems.join("\n"));
	process.exit(1);
}
console.log(
	`import check: ${graph.size} modules in src/, no cycle; src/, bench/ and scripts/ import nothing from test/ (src/ nothing from fixtures/); no SQL outside src/db/`,
);
