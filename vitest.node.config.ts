// The command-line tools (scripts/) run in Node, not in workerd: their tests need child_process
// and the file system, so they run in a second vitest pass with the Node environment.
import { defineConfig } from "vitest/config";

export default defineConfig({
	test: {
		environment: "node",
		include: ["test/node/**/*.test.ts"],
		// Each test starts a tool with tsx; setup:cloudflare loads wrangler (seconds on a busy machine).
		testTimeout: 30_000,
	},
});
