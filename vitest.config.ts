import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { TEST_VARS } from "./test/vars.ts";

export default defineConfig(async () => {
	const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
	return {
		plugins: [
			cloudflareTest({
				wrangler: { configPath: "./wrangler.toml" },
				miniflare: {
					// Tests drive consumers explicitly (createMessageBatch); no background delivery.
					queueConsumers: {},
					bindings: { ...TEST_VARS, TEST_MIGRATIONS: migrations },
				},
			}),
		],
		test: {
			setupFiles: ["./test/setup.ts"],
			// The Worker's structured log lines are asserted on where they matter; keep CI output readable.
			onConsoleLog: (line: string) => !line.startsWith('{"level":'),
		},
	};
});
