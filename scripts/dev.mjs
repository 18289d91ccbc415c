#!/usr/bin/env node
// `npm run dev`: local receiver on the embedded default (local D1 and Queues, no account needed).
// Creates .dev.vars from the example when missing, applies local migrations, starts wrangler dev.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

if (!existsSync(".dev.vars")) {
	// It holds secrets: readable by its owner only, and never written over an existing file.
	writeFileSync(".dev.vars", readFileSync(".dev.vars.example"), { mode: 0o600, flag: "wx" });
	console.log("Created .dev.vars from .dev.vars.example (development secrets, mode 0600).");
}

const wrangler = (args) =>
	spawnSync(process.execPath, ["node_modules/wrangler/bin/wrangler.js", ...args], {
		stdio: "inherit",
		env: { ...process.env, CI: process.env.CI ?? "1", WRANGLER_SEND_METRICS: "false" },
	});

const migrate = wrangler(["d1", "migrations", "apply", "DB", "--local"]);
if (migrate.status !== 0) process.exit(migrate.status ?? 1);

const dev = wrangler(["dev", ...process.argv.slice(2)]);
process.exit(dev.status ?? 0);
