#!/usr/bin/env node
// `npm run dev`: local receiver on the embedded default (local D1 and Queues, no account needed).
// Creates .dev.vars from the example when missing, applies local migrations, starts wrangler dev,
// and once /healthz answers, prints where everything is and what to try next.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { parseEnv } from "node:util";

if (!existsSync(".dev.vars")) {
	// It holds secrets: readable by its owner only, and never written over an existing file.
	writeFileSync(".dev.vars", readFileSync(".dev.vars.example"), { mode: 0o600, flag: "wx" });
	console.log("Created .dev.vars from .dev.vars.example (development secrets, mode 0600).");
}

const wranglerArgs = (args) => ["node_modules/wrangler/bin/wrangler.js", ...args];
const wranglerEnv = { ...process.env, CI: process.env.CI ?? "1", WRANGLER_SEND_METRICS: "false" };

// Every shard carries the whole schema (DB_SHARDS in .dev.vars, DB first; src/db/shards.ts). Each
// listed binding must also be a [[d1_databases]] entry of wrangler.toml.
const shards = (parseEnv(readFileSync(".dev.vars", "utf8")).DB_SHARDS ?? "")
	.split(",")
	.map((s) => s.trim())
	.filter((s) => s !== "");
for (const binding of shards.length === 0 ? ["DB"] : shards) {
	const migrate = spawnSync(process.execPath, wranglerArgs(["d1", "migrations", "apply", binding, "--local"]), {
		stdio: "inherit",
		env: wranglerEnv,
	});
	if (migrate.status !== 0) process.exit(migrate.status ?? 1);
}

const args = process.argv.slice(2);
const flag = (name) => {
	const i = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
	if (i === -1) return null;
	return args[i]?.includes("=") ? args[i].split("=")[1] : (args[i + 1] ?? null);
};
const base = `http://${flag("ip") && flag("ip") !== "0.0.0.0" ? flag("ip") : "localhost"}:${flag("port") ?? "8787"}`;

const dev = spawn(process.execPath, wranglerArgs(["dev", ...args]), { stdio: "inherit", env: wranglerEnv });
dev.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

function greeting(health) {
	const vars = parseEnv(readFileSync(".dev.vars", "utf8"));
	const tokenPath = vars.WEBHOOK_PATH_TOKEN ? "/<WEBHOOK_PATH_TOKEN>" : "";
	const admin = vars.ADMIN_TOKEN
		? "Authorization: Bearer <ADMIN_TOKEN from .dev.vars>"
		: "off: set ADMIN_TOKEN in .dev.vars (it answers 404 until then)";
	const url = base === "http://localhost:8787" ? "" : ` --url ${base}`;
	return [
		"",
		`Receiver ready (${health}):`,
		`  webhooks   POST ${base}/webhooks/<provider>${tokenPath}  (each sender in src/providers/index.ts whose secrets are set)`,
		`  health     ${base}/healthz`,
		`  console    ${base}/console`,
		`  admin API  ${base}/admin/metrics, /admin/deliveries, ...  (${admin})`,
		`  crons      curl "${base}/cdn-cgi/handler/scheduled?cron=*+*+*+*+*"  (the sweep)`,
		"Try next, in another terminal:",
		...[
			[
				`npm run send-test-event${url ? ` --${url}` : ""}`,
				"one signed event from the first provider (status PENDING: no effect)",
			],
			[`npm run simulate -- --orders 200${url}`, "a provider's life: duplicates, shuffled order, retries"],
			["npm test", "the test suite"],
		].map(([cmd, what]) => `  ${cmd.padEnd(44)} ${what}`),
		"",
	].join("\n");
}

// Polls /healthz until wrangler dev serves it, then greets once (the answer says if something is off).
const started = Date.now();
let greeted = false;
const poll = setInterval(async () => {
	if (Date.now() - started > 120_000) return clearInterval(poll);
	try {
		const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2_000) });
		clearInterval(poll);
		if (greeted) return;
		greeted = true;
		const body = await res.text();
		console.log(greeting(res.ok ? "healthy" : `/healthz answered ${res.status} ${body}`));
	} catch {
		// not listening yet
	}
}, 500);
