import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { unstable_readConfig } from "wrangler";
import { TEST_VARS } from "./test/vars.ts";

// The test Worker takes its bindings from wrangler.toml, but not its queue consumers: tests drive
// consumers explicitly (createMessageBatch), and a background consumer would apply messages
// behind their back with the wrong env. Nor .dev.vars: tests set every variable (test/vars.ts).
const wrangler = unstable_readConfig({ config: "wrangler.toml" });

export default defineConfig(async () => {
	const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
	return {
		plugins: [
			cloudflareTest({
				main: "./src/index.ts",
				miniflare: {
					compatibilityDate: wrangler.compatibility_date,
					compatibilityFlags: wrangler.compatibility_flags,
					d1Databases: Object.fromEntries(
						wrangler.d1_databases.map((d: { binding: string; database_id?: string }) => [
							d.binding,
							d.database_id ?? d.binding,
						]),
					),
					queueProducers: Object.fromEntries(
						(wrangler.queues.producers ?? []).map((q: { binding: string; queue: string }): [string, string] => [
							q.binding,
							q.queue,
						]),
					) as Record<string, string>,
					bindings: { ...TEST_VARS, TEST_MIGRATIONS: migrations },
				},
			}),
		],
		test: {
			setupFiles: ["./test/setup.ts"],
			// The Worker's structured log lines are asserted on where they matter; keep CI output readable.
			onConsoleLog: (line: string) => process.env.SHOW_LOGS === "1" || !line.startsWith('{"level":'),
		},
	};
});
