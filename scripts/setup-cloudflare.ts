/**
 * npm run setup:cloudflare [-- --dry-run] [--file .secrets.production]
 *
 * Provisions what wrangler.toml names on the Cloudflare account wrangler is logged in to:
 * creates each D1 database, queue (dead-letter queues included) and R2 bucket that is absent
 * (listed first), writes a created database's id into wrangler.toml, applies the D1 migrations
 * remotely and uploads the secrets of a git-ignored dotenv file with `wrangler secret bulk`.
 * Safe to run again: what exists is left alone. Every name comes from wrangler.toml.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";
import { unstable_readConfig } from "wrangler";
import { parseToolArgs } from "./sim/tool";

export interface RunResult {
	status: number;
	stdout: string;
	stderr: string;
}
/** Runs `wrangler <args>`; a stand-in records the calls in tests. */
export type WranglerRunner = (args: readonly string[]) => RunResult;

export interface SetupOptions {
	/** The directory holding wrangler.toml (and the secrets file, relative paths). */
	cwd: string;
	run: WranglerRunner;
	secretsFile: string;
	dryRun: boolean;
	print: (line: string) => void;
}

/** What the run did, for the summary and the tests. */
export interface SetupReport {
	created: string[];
	existing: string[];
	configUpdated: string[];
	migrations: "applied" | "skipped";
	secrets: string[];
}

/** The id wrangler.toml ships with: a database that was never created. */
export const PLACEHOLDER_ID = "00000000-0000-0000-0000-000000000000";

export class SetupError extends Error {
	override name = "SetupError";
}

interface Declared {
	databases: { binding: string; name: string; id: string | null }[];
	queues: string[];
	buckets: string[];
	rateLimits: string[];
}

/** The resources wrangler.toml declares, each once. */
export function declaredResources(configPath: string): Declared {
	const config = unstable_readConfig({ config: configPath });
	const queues = new Set<string>();
	for (const p of config.queues.producers ?? []) queues.add(p.queue);
	for (const c of config.queues.consumers ?? []) {
		queues.add(c.queue);
		if (c.dead_letter_queue) queues.add(c.dead_letter_queue);
	}
	return {
		databases: config.d1_databases.map((d: { binding: string; database_name?: string; database_id?: string }) => {
			if (!d.database_name) throw new SetupError(`[[d1_databases]] ${d.binding} has no database_name`);
			const id = d.database_id && d.database_id !== PLACEHOLDER_ID ? d.database_id : null;
			return { binding: d.binding, name: d.database_name, id };
		}),
		queues: [...queues],
		buckets: [
			...new Set(
				(config.r2_buckets as { bucket_name?: string }[]).map((b) => b.bucket_name).filter((n): n is string => !!n),
			),
		],
		rateLimits: (config.ratelimits as { name: string }[]).map((r) => r.name),
	};
}

function must(run: WranglerRunner, args: readonly string[]): string {
	const res = run(args);
	if (res.status !== 0) {
		const detail = (res.stderr || res.stdout).trim().split("\n").slice(-5).join("\n");
		throw new SetupError(`wrangler ${args.join(" ")} failed (exit ${res.status}):\n${detail}`);
	}
	return res.stdout;
}

function listDatabases(run: WranglerRunner): Map<string, string> {
	const out = must(run, ["d1", "list", "--json"]);
	let rows: unknown;
	try {
		rows = JSON.parse(out.slice(out.indexOf("[")));
	} catch {
		throw new SetupError("wrangler d1 list --json did not print JSON");
	}
	const byName = new Map<string, string>();
	for (const row of Array.isArray(rows) ? rows : []) {
		const r = row as { name?: unknown; uuid?: unknown };
		if (typeof r.name === "string" && typeof r.uuid === "string") byName.set(r.name, r.uuid);
	}
	return byName;
}

/** `wrangler queues list` prints a table a page at a time: every cell of every page. */
function listQueues(run: WranglerRunner): Set<string> {
	const names = new Set<string>();
	for (let page = 1; page <= 100; page++) {
		const out = must(run, ["queues", "list", "--page", String(page)]);
		let rows = 0;
		for (const line of out.split("\n")) {
			if (!line.includes("│") && !line.includes("|")) continue;
			const cells = line
				.split(/[│|]/)
				.map((c) => c.trim())
				.filter(Boolean);
			if (cells.length < 2 || cells[1] === "name") continue;
			rows++;
			for (const cell of cells) names.add(cell);
		}
		if (rows === 0) break;
	}
	return names;
}

function listBuckets(run: WranglerRunner): Set<string> {
	const out = must(run, ["r2", "bucket", "list"]);
	return new Set([...out.matchAll(/^name:\s+(\S+)/gm)].map((m) => m[1] as string));
}

/** Replaces the database_id of the [[d1_databases]] block naming `name` (or adds the line). */
export function writeDatabaseId(toml: string, name: string, id: string): string {
	const blocks = toml.split(/(?=^\[)/m);
	let found = false;
	const out = blocks.map((block) => {
		if (!/^\[\[d1_databases\]\]/.test(block)) return block;
		if (!new RegExp(`^database_name\\s*=\\s*"${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"`, "m").test(block))
			return block;
		found = true;
		if (/^database_id\s*=.*$/m.test(block)) return block.replace(/^database_id\s*=.*$/m, `database_id = "${id}"`);
		return block.replace(/^(database_name\s*=.*)$/m, `$1\ndatabase_id = "${id}"`);
	});
	if (!found) throw new SetupError(`wrangler.toml has no [[d1_databases]] block for ${name}`);
	return out.join("");
}

/**
 * The secrets file's names, checked: dotenv syntax (Node's parser), no empty value, and no value
 * published in .dev.vars.example (the Worker refuses those off localhost).
 */
export function readSecrets(file: string, examplePath: string): string[] {
	const values = parseEnv(readFileSync(file, "utf8"));
	const published = new Set(
		existsSync(examplePath)
			? Object.values(parseEnv(readFileSync(examplePath, "utf8"))).filter((v): v is string => !!v && v.length > 8)
			: [],
	);
	const names = Object.keys(values);
	if (names.length === 0) throw new SetupError(`${file} holds no NAME=value line`);
	for (const name of names) {
		const value = values[name] ?? "";
		if (value.trim() === "") throw new SetupError(`${file}: ${name} is empty`);
		if (published.has(value))
			throw new SetupError(`${file}: ${name} holds a value from .dev.vars.example; set your own`);
	}
	return names;
}

export function setupCloudflare(options: SetupOptions): SetupReport {
	const { run, print, dryRun } = options;
	const configPath = path.join(options.cwd, "wrangler.toml");
	const declared = declaredResources(configPath);
	const report: SetupReport = { created: [], existing: [], configUpdated: [], migrations: "skipped", secrets: [] };
	const act = (what: string, args: readonly string[]) => {
		print(`${dryRun ? "would create" : "creating"} ${what}`);
		if (!dryRun) must(run, args);
		report.created.push(what);
	};

	const secretsPath = path.resolve(options.cwd, options.secretsFile);
	// Checked before anything is created: a bad file stops the run while nothing has changed.
	const secretNames = existsSync(secretsPath)
		? readSecrets(secretsPath, path.join(options.cwd, ".dev.vars.example"))
		: null;

	const databases = listDatabases(run);
	let toml = readFileSync(configPath, "utf8");
	for (const db of declared.databases) {
		const what = `D1 database ${db.name}`;
		let id = databases.get(db.name) ?? null;
		if (id === null) {
			act(what, ["d1", "create", db.name]);
			if (!dryRun) {
				id = listDatabases(run).get(db.name) ?? null;
				if (id === null) throw new SetupError(`${db.name} was created but d1 list does not show it`);
			}
		} else {
			print(`exists   ${what} (${id})`);
			report.existing.push(what);
		}
		if (id !== null && id !== db.id) {
			toml = writeDatabaseId(toml, db.name, id);
			print(
				`${dryRun ? "would write" : "writing"} database_id ${id} of ${db.name} (binding ${db.binding}) into wrangler.toml`,
			);
			report.configUpdated.push(db.name);
		}
	}
	if (report.configUpdated.length > 0 && !dryRun) writeFileSync(configPath, toml);

	if (declared.queues.length > 0) {
		const queues = listQueues(run);
		for (const q of declared.queues) {
			if (queues.has(q)) {
				print(`exists   queue ${q}`);
				report.existing.push(`queue ${q}`);
			} else act(`queue ${q}`, ["queues", "create", q]);
		}
	}

	if (declared.buckets.length > 0) {
		const buckets = listBuckets(run);
		for (const b of declared.buckets) {
			if (buckets.has(b)) {
				print(`exists   R2 bucket ${b}`);
				report.existing.push(`R2 bucket ${b}`);
			} else act(`R2 bucket ${b}`, ["r2", "bucket", "create", b]);
		}
	}
	for (const r of declared.rateLimits)
		print(`nothing to create for rate limiter ${r}: its namespace_id in wrangler.toml is the namespace`);

	for (const db of declared.databases) {
		// Applies only what d1_migrations does not list yet, so a second run applies nothing.
		print(`${dryRun ? "would apply" : "applying"} migrations to ${db.name} (remote)`);
		if (!dryRun) must(run, ["d1", "migrations", "apply", db.binding, "--remote"]);
	}
	report.migrations = dryRun || declared.databases.length === 0 ? "skipped" : "applied";

	if (secretNames === null) {
		print(`no ${options.secretsFile}: no secret uploaded (see README "Deploy to Cloudflare")`);
	} else {
		print(`${dryRun ? "would upload" : "uploading"} secrets from ${options.secretsFile}: ${secretNames.join(", ")}`);
		if (!dryRun) must(run, ["secret", "bulk", secretsPath]);
		report.secrets = secretNames;
	}

	print(
		report.created.length === 0
			? "nothing created: every resource already existed"
			: `${dryRun ? "would create" : "created"}: ${report.created.join(", ")}`,
	);
	return report;
}

/** The real runner: this repository's wrangler, output captured (and echoed on failure by `must`). */
export function wranglerRunner(cwd: string): WranglerRunner {
	const bin = path.join(cwd, "node_modules", "wrangler", "bin", "wrangler.js");
	return (args) => {
		const res = spawnSync(process.execPath, [bin, ...args], {
			cwd,
			encoding: "utf8",
			env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: process.env.CI ?? "1" },
			stdio: ["ignore", "pipe", "pipe"],
		});
		return { status: res.status ?? 1, stdout: res.stdout ?? "", stderr: res.stderr ?? "" };
	};
}

const USAGE = `Usage: npm run setup:cloudflare [-- --dry-run] [--file .secrets.production]

Creates the D1 databases, queues and R2 buckets wrangler.toml names when absent, writes a created
database's id into wrangler.toml, applies the D1 migrations remotely and uploads the secrets file
(dotenv NAME=value lines, git-ignored) with \`wrangler secret bulk\`. Run \`npx wrangler login\` first,
or set CLOUDFLARE_API_TOKEN (scopes: README "Deploy to Cloudflare").`;

export function main(argv: readonly string[], cwd = process.cwd(), run = wranglerRunner(cwd)): number {
	const parsed = parseToolArgs(
		"setup:cloudflare",
		USAGE,
		{ "dry-run": { type: "boolean" }, file: { type: "string", default: ".secrets.production" } },
		argv,
	);
	if (!parsed.ok) {
		if (parsed.exitCode === 0) console.log(parsed.output);
		else console.error(parsed.output);
		return parsed.exitCode;
	}
	const values = parsed.values;
	try {
		setupCloudflare({
			cwd,
			run,
			secretsFile: typeof values.file === "string" ? values.file : ".secrets.production",
			dryRun: values["dry-run"] === true,
			print: (line) => console.log(line),
		});
		return 0;
	} catch (err) {
		if (!(err instanceof SetupError)) throw err;
		console.error(`setup:cloudflare: ${err.message}`);
		return 1;
	}
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
	process.exit(main(process.argv.slice(2)));
}
