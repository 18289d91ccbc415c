/**
 * The command-line tools as a user runs them (tsx, a working directory with its own .dev.vars),
 * against a stand-in receiver served by this test that records what it is sent.
 */
import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TSX = path.join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
const TOOLS = {
	"send-test-event": "scripts/send-test-event.ts",
	simulate: "scripts/simulate.ts",
	"public-key": "scripts/public-key.ts",
	"setup:cloudflare": "scripts/setup-cloudflare.ts",
} as const;

interface Run {
	code: number;
	stdout: string;
	stderr: string;
}

function run(tool: keyof typeof TOOLS, args: string[], env: Record<string, string> = {}): Promise<Run> {
	return new Promise((resolve) => {
		execFile(
			process.execPath,
			[TSX, path.join(ROOT, TOOLS[tool]), ...args],
			// A clean environment: nothing of the developer's shell decides what the tool reads.
			{ cwd, env: { PATH: process.env.PATH ?? "", HOME: cwd, ...env }, timeout: 30_000 },
			(err, stdout, stderr) =>
				resolve({
					code: err ? ((err as { code?: number }).code ?? 1) : 0,
					stdout: String(stdout),
					stderr: String(stderr),
				}),
		);
	});
}

interface Seen {
	method: string;
	url: string;
	headers: IncomingMessage["headers"];
	body: string;
}
let cwd: string;
let server: Server;
let seen: Seen[];
let health: { status: number; body: unknown };
let base: string;

beforeEach(async () => {
	cwd = mkdtempSync(path.join(tmpdir(), "tools-"));
	seen = [];
	health = { status: 200, body: { ok: true } };
	server = createServer((req, res) => {
		let body = "";
		req.on("data", (c) => {
			body += c;
		});
		req.on("end", () => {
			seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
			if (req.url === "/healthz") {
				res.writeHead(health.status, { "content-type": "application/json" });
				res.end(JSON.stringify(health.body));
			} else {
				res.writeHead(200);
				res.end();
			}
		});
	});
	await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
	base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(() => new Promise<void>((r) => server.close(() => r())));

describe("every tool", () => {
	it.each(Object.keys(TOOLS) as (keyof typeof TOOLS)[])("%s --help prints its usage and exits 0", async (tool) => {
		const r = await run(tool, ["--help"]);
		expect(r.code).toBe(0);
		expect(r.stdout).toMatch(/^Usage: npm run /);
	});

	it.each(Object.keys(TOOLS) as (keyof typeof TOOLS)[])(
		"%s refuses an unknown flag with the usage, exit 2",
		async (tool) => {
			const r = await run(tool, ["--bogus"]);
			expect(r.code).toBe(2);
			expect(r.stderr).toMatch(/Unknown option '--bogus'[\s\S]*Usage: npm run /);
		},
	);

	it.each([
		["send-test-event", "--path-token=abc"],
		["simulate", "--path-token=abc"],
		["send-test-event", "--secret=abc"],
	] as const)("%s refuses a secret as a flag (%s): it would land in shell history", async (tool, flag) => {
		const r = await run(tool, [flag]);
		expect(r.code).toBe(2);
		expect(r.stderr).toMatch(/never from flags/);
	});
});

describe("send-test-event cannot hurt production", () => {
	it("defaults to status PENDING (no effect), tags its ids sim_, checks /healthz first", async () => {
		writeFileSync(path.join(cwd, ".dev.vars"), 'BLOOBANK_WEBHOOK_SECRETS="dev-secret-0123456789"\n');
		const r = await run("send-test-event", ["--url", base]);
		expect(r.stderr).toBe("");
		expect(r.code).toBe(0);
		expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(["GET /healthz", "POST /webhooks/bloobank"]);
		const body = JSON.parse(seen[1]?.body ?? "{}");
		expect(body.data.status).toBe("PENDING");
		expect(body.messageId).toMatch(/^sim_/);
		expect(body.data.id).toMatch(/^sim_/);
	});

	it("sends SUCCESS only when asked with --status SUCCESS", async () => {
		writeFileSync(path.join(cwd, ".dev.vars"), 'BLOOBANK_WEBHOOK_SECRETS="dev-secret-0123456789"\n');
		expect((await run("send-test-event", ["--url", base, "--status", "SUCCESS"])).code).toBe(0);
		expect(JSON.parse(seen[1]?.body ?? "{}").data.status).toBe("SUCCESS");
	});

	it("signs with the decoded bytes when BLOOBANK_SECRET_ENCODING=base64, and puts the path token from the environment in the path", async () => {
		const key = Buffer.from("raw key bytes \u0001\u0002 0123456789");
		// Node's dotenv parser: single quotes, `export`, a trailing comment.
		writeFileSync(
			path.join(cwd, ".dev.vars"),
			`export BLOOBANK_WEBHOOK_SECRETS='${key.toString("base64")}' # from the dashboard\nBLOOBANK_SECRET_ENCODING=base64\n`,
		);
		const token = "path-token-from-env-0123456789abcdef";
		const r = await run("send-test-event", ["--url", base], { WEBHOOK_PATH_TOKEN: token });
		expect(r.code).toBe(0);
		const post = seen[1] as Seen;
		expect(post.url).toBe(`/webhooks/bloobank/${token}`);
		expect(r.stdout).not.toContain(token);
		const ts = post.headers["x-bloobank-timestamp"] as string;
		const expected = createHmac("sha256", key).update(`${ts}.${post.body}`).digest("hex");
		expect(post.headers["x-bloobank-signature"]).toBe(`t=${ts},v1=${expected}`);
	});

	it("an unreachable receiver is a clean error naming the URL, exit 1", async () => {
		writeFileSync(path.join(cwd, ".dev.vars"), 'BLOOBANK_WEBHOOK_SECRETS="dev-secret-0123456789"\n');
		await new Promise<void>((r) => server.close(() => r()));
		const r = await run("send-test-event", ["--url", base]);
		expect(r.code).toBe(1);
		expect(r.stderr).toMatch(new RegExp(`cannot reach ${base} \\(ECONNREFUSED\\): is \`npm run dev\` running`));
		expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
		server = createServer().listen(0);
	});

	it("an unhealthy receiver (migrations not applied) is reported and nothing is sent", async () => {
		writeFileSync(path.join(cwd, ".dev.vars"), 'BLOOBANK_WEBHOOK_SECRETS="dev-secret-0123456789"\n');
		health = { status: 503, body: { ok: false, error: "migrations" } };
		const r = await run("send-test-event", ["--url", base]);
		expect(r.code).toBe(1);
		expect(r.stderr).toMatch(/not healthy: the D1 migrations are not applied/);
		expect(seen.map((s) => s.url)).toEqual(["/healthz"]);
	});
});

describe("the simulator stays local unless told --remote", () => {
	it("refuses a non-loopback URL without --remote, before any request", async () => {
		writeFileSync(path.join(cwd, ".dev.vars"), 'BLOOBANK_WEBHOOK_SECRETS="dev-secret-0123456789"\n');
		const r = await run("simulate", ["--url", "https://receiver.invalid"]);
		expect(r.code).toBe(2);
		expect(r.stderr).toMatch(/is not loopback[\s\S]*pass --remote/);
	});

	it("with --remote it goes on to the health check (here: the host does not resolve, exit 1)", async () => {
		writeFileSync(path.join(cwd, ".dev.vars"), 'BLOOBANK_WEBHOOK_SECRETS="dev-secret-0123456789"\n');
		const r = await run("simulate", ["--url", "https://receiver.invalid", "--remote", "--orders", "1"]);
		expect(r.code).toBe(1);
		expect(r.stderr).toMatch(/cannot reach https:\/\/receiver\.invalid/);
	});

	it("tags every delivery it sends: message ids and order ids start with sim_", async () => {
		writeFileSync(path.join(cwd, ".dev.vars"), 'BLOOBANK_WEBHOOK_SECRETS="dev-secret-0123456789"\n');
		const r = await run("simulate", ["--url", base, "--orders", "3", "--duplicate-rate", "0"]);
		// No ADMIN_TOKEN: nothing to verify against, so exit 1 ("not checked"), but everything was sent.
		expect(r.stdout).toMatch(/mismatches\s+not checked/);
		const posts = seen.filter((s) => s.method === "POST");
		expect(posts.length).toBeGreaterThanOrEqual(3);
		for (const p of posts) {
			const body = JSON.parse(p.body);
			expect(body.messageId).toMatch(/^sim_/);
			expect(body.data.id).toMatch(/^sim_/);
		}
	});
});
