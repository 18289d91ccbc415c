/**
 * `npm run setup:cloudflare` against a stand-in wrangler: an account held in memory that answers
 * the list commands the way wrangler 4.86 prints them and records every call. No network.
 */
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { main, PLACEHOLDER_ID, type RunResult, setupCloudflare } from "../../scripts/setup-cloudflare";

const ROOT = path.resolve(import.meta.dirname, "../..");

class StandInWrangler {
	calls: string[][] = [];
	databases = new Map<string, string>();
	queues = new Set<string>();
	buckets = new Set<string>();
	migrationsApplied = 0;
	secretsUploaded: string[] = [];
	failOn: string | null = null;

	run = (args: readonly string[]): RunResult => {
		this.calls.push([...args]);
		const cmd = args.join(" ");
		const ok = (stdout = ""): RunResult => ({ status: 0, stdout, stderr: "" });
		if (this.failOn && cmd.startsWith(this.failOn))
			return { status: 1, stdout: "", stderr: "✘ [ERROR] Authentication error [code: 10000]" };
		if (cmd === "d1 list --json")
			return ok(JSON.stringify([...this.databases].map(([name, uuid]) => ({ uuid, name, version: "production" }))));
		if (args[0] === "d1" && args[1] === "create") {
			this.databases.set(args[2] as string, `1111111${this.databases.size}-2222-3333-4444-555555555555`);
			return ok(`✅ Successfully created DB '${args[2]}'`);
		}
		if (args[0] === "queues" && args[1] === "list") {
			// One page holds everything; page 2 prints an empty table, as the API pages run out.
			const rows = args[3] === "1" ? [...this.queues] : [];
			return ok(
				[
					"┌──────┬──────┬────────────┐",
					"│ id │ name │ created_on │",
					"├──────┼──────┼────────────┤",
					...rows.map((q, i) => `│ q${i} │ ${q} │ 2026-11-30 │`),
					"└──────┴──────┴────────────┘",
				].join("\n"),
			);
		}
		if (args[0] === "queues" && args[1] === "create") {
			this.queues.add(args[2] as string);
			return ok();
		}
		if (cmd === "r2 bucket list")
			return ok(
				`Listing buckets...\n${[...this.buckets].map((b) => `name:           ${b}\ncreation_date:  2026-11-30`).join("\n\n")}`,
			);
		if (args[0] === "r2" && args[1] === "bucket" && args[2] === "create") {
			this.buckets.add(args[3] as string);
			return ok();
		}
		if (cmd === "d1 migrations apply DB --remote") {
			this.migrationsApplied++;
			return ok();
		}
		if (args[0] === "secret" && args[1] === "bulk") {
			this.secretsUploaded.push(readFileSync(args[2] as string, "utf8"));
			return ok();
		}
		return { status: 1, stdout: "", stderr: `stand-in: unexpected wrangler ${cmd}` };
	};

	creations(): string[] {
		return this.calls.filter((c) => c.includes("create")).map((c) => c.join(" "));
	}
}

let dir: string;
let wrangler: StandInWrangler;
const printed: string[] = [];
const setup = (extra: Partial<Parameters<typeof setupCloudflare>[0]> = {}) =>
	setupCloudflare({
		cwd: dir,
		run: wrangler.run,
		secretsFile: ".secrets.production",
		dryRun: false,
		print: (l) => printed.push(l),
		...extra,
	});

beforeEach(() => {
	dir = mkdtempSync(path.join(tmpdir(), "setup-cf-"));
	copyFileSync(path.join(ROOT, "wrangler.toml"), path.join(dir, "wrangler.toml"));
	copyFileSync(path.join(ROOT, ".dev.vars.example"), path.join(dir, ".dev.vars.example"));
	wrangler = new StandInWrangler();
	printed.length = 0;
});

const QUEUES = ["webhook-events", "webhook-events-dlq", "webhook-reconcile", "webhook-reconcile-dlq"];
/** The bodies archive wrangler.toml declares (binding ARCHIVE). */
const BUCKET = "payment-webhooks-archive";

describe("npm run setup:cloudflare", () => {
	it("first run creates the database, the four queues and the R2 bucket wrangler.toml names, writes the id, applies migrations", () => {
		const report = setup();
		expect(wrangler.creations().sort()).toEqual(
			["d1 create payment-webhooks", ...QUEUES.map((q) => `queues create ${q}`), `r2 bucket create ${BUCKET}`].sort(),
		);
		const id = wrangler.databases.get("payment-webhooks");
		const toml = readFileSync(path.join(dir, "wrangler.toml"), "utf8");
		expect(toml).toContain(`database_id = "${id}"`);
		expect(toml).not.toContain(PLACEHOLDER_ID);
		expect(wrangler.migrationsApplied).toBe(1);
		expect(report.configUpdated).toEqual(["payment-webhooks"]);
		expect(printed.at(-1)).toMatch(/^created: /);
	});

	it("second run creates nothing and leaves wrangler.toml as it was (idempotent)", () => {
		setup();
		const toml = readFileSync(path.join(dir, "wrangler.toml"), "utf8");
		wrangler.calls = [];
		printed.length = 0;
		const report = setup();
		expect(wrangler.creations()).toEqual([]);
		expect(report.created).toEqual([]);
		expect(report.configUpdated).toEqual([]);
		expect(readFileSync(path.join(dir, "wrangler.toml"), "utf8")).toBe(toml);
		expect(printed).toContain("nothing created: every resource already existed");
	});

	it("lists before creating: a queue that already exists is not created again", () => {
		wrangler.queues.add("webhook-events");
		wrangler.databases.set("payment-webhooks", "abcdabcd-0000-0000-0000-000000000001");
		setup();
		expect(wrangler.creations().sort()).toEqual(
			[
				...QUEUES.filter((q) => q !== "webhook-events").map((q) => `queues create ${q}`),
				`r2 bucket create ${BUCKET}`,
			].sort(),
		);
		expect(readFileSync(path.join(dir, "wrangler.toml"), "utf8")).toContain(
			'database_id = "abcdabcd-0000-0000-0000-000000000001"',
		);
	});

	it("reads every name from wrangler.toml: a renamed queue and a renamed R2 bucket are created as named", () => {
		const file = path.join(dir, "wrangler.toml");
		writeFileSync(
			file,
			readFileSync(file, "utf8").replaceAll("webhook-events-dlq", "orders-dlq").replaceAll(BUCKET, "webhook-archive"),
		);
		setup();
		expect(wrangler.creations()).toContain("queues create orders-dlq");
		expect(wrangler.creations()).not.toContain("queues create webhook-events-dlq");
		expect(wrangler.creations()).toContain("r2 bucket create webhook-archive");
		wrangler.calls = [];
		setup();
		expect(wrangler.creations()).toEqual([]);
	});

	it("uploads the secrets file with wrangler secret bulk, printing names only", () => {
		const secret = "a-real-admin-token-0123456789abcdef0123456789";
		writeFileSync(
			path.join(dir, ".secrets.production"),
			`ADMIN_TOKEN="${secret}"\n# a comment\nBLOOBANK_WEBHOOK_SECRETS=s1,s2\n`,
		);
		const report = setup();
		expect(report.secrets).toEqual(["ADMIN_TOKEN", "BLOOBANK_WEBHOOK_SECRETS"]);
		expect(wrangler.secretsUploaded).toHaveLength(1);
		expect(printed.join("\n")).not.toContain(secret);
	});

	it("refuses a secrets file holding a value from .dev.vars.example, before creating anything", () => {
		writeFileSync(
			path.join(dir, ".secrets.production"),
			"ADMIN_TOKEN=dev-admin-token-change-me-0123456789abcdef0123\n",
		);
		expect(() => setup()).toThrow(/ADMIN_TOKEN holds a value from \.dev\.vars\.example/);
		expect(wrangler.calls).toEqual([]);
	});

	it("--dry-run lists and prints, and creates, writes and uploads nothing", () => {
		const before = readFileSync(path.join(dir, "wrangler.toml"), "utf8");
		const report = setup({ dryRun: true });
		expect(report.created.length).toBe(6);
		expect(wrangler.creations()).toEqual([]);
		expect(wrangler.migrationsApplied).toBe(0);
		expect(readFileSync(path.join(dir, "wrangler.toml"), "utf8")).toBe(before);
	});

	it("a failing wrangler call stops the run with its message (exit 1)", () => {
		wrangler.failOn = "queues list";
		const errors: string[] = [];
		const original = console.error;
		console.error = (m: string) => errors.push(m);
		try {
			expect(main([], dir, wrangler.run)).toBe(1);
		} finally {
			console.error = original;
		}
		expect(errors.join("\n")).toMatch(/wrangler queues list --page 1 failed \(exit 1\)[\s\S]*Authentication error/);
	});

	it("an unknown flag is refused with the usage (exit 2)", () => {
		const errors: string[] = [];
		const original = console.error;
		console.error = (m: string) => errors.push(m);
		try {
			expect(main(["--force"], dir, wrangler.run)).toBe(2);
		} finally {
			console.error = original;
		}
		expect(errors.join("\n")).toMatch(/Unknown option '--force'[\s\S]*Usage: npm run setup:cloudflare/);
		expect(wrangler.calls).toEqual([]);
	});
});
