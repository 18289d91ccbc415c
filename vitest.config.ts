import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { configDefaults, defineConfig } from "vitest/config";
import { unstable_readConfig } from "wrangler";
import { TEST_VARS } from "./test/vars.ts";

// The test Worker takes its bindings from wrangler.toml, but not its queue consumers: tests drive
// consumers explicitly (createMessageBatch), and a background consumer would apply messages
// behind their back with the wrong env. Nor .dev.vars: tests set every variable (test/vars.ts).
const wrangler = unstable_readConfig({ config: "wrangler.toml" });

/** What test/wiring/names.test.ts checks against the code: the names wrangler.toml declares. */
const declaredNames = {
	producers: (wrangler.queues.producers ?? []).map(({ binding, queue }: { binding: string; queue: string }) => ({
		binding,
		queue,
	})),
	consumers: (wrangler.queues.consumers ?? []).map(
		(c: { queue: string; dead_letter_queue?: string; max_retries?: number }) => ({
			queue: c.queue,
			deadLetterQueue: c.dead_letter_queue ?? null,
			maxRetries: c.max_retries ?? null,
		}),
	),
	crons: (wrangler.triggers.crons ?? []) as string[],
	vars: Object.keys(wrangler.vars ?? {}),
};

/**
 * TEST_SHARDS=3 runs the whole suite over three D1 shards (DB, DB_1, DB_2; src/db/shards.ts), as
 * `npm test` does after the one-shard run: every behaviour must hold however resources are placed.
 */
const shardCount = Number(process.env.TEST_SHARDS ?? "1");
if (!Number.isSafeInteger(shardCount) || shardCount < 1) throw new Error("TEST_SHARDS must be a positive integer");
const extraShards = Array.from({ length: shardCount - 1 }, (_, i) => `DB_${i + 1}`);

export default defineConfig(async () => {
	const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
	return {
		plugins: [
			cloudflareTest({
				main: "./src/index.ts",
				miniflare: {
					compatibilityDate: wrangler.compatibility_date,
					compatibilityFlags: wrangler.compatibility_flags,
					d1Databases: Object.fromEntries([
						...wrangler.d1_databases.map((d: { binding: string; database_id?: string }) => [
							d.binding,
							d.database_id ?? d.binding,
						]),
						...extraShards.map((name) => [name, `test-shard-${name}`]),
					]),
					r2Buckets: Object.fromEntries(
						(wrangler.r2_buckets ?? []).map((b: { binding: string; bucket_name?: string }) => [
							b.binding,
							b.bucket_name ?? b.binding,
						]),
					),
					queueProducers: Object.fromEntries(
						(wrangler.queues.producers ?? []).map((q: { binding: string; queue: string }): [string, string] => [
							q.binding,
							q.queue,
						]),
					) as Record<string, string>,
					bindings: {
						...TEST_VARS,
						...(shardCount > 1 ? { DB_SHARDS: ["DB", ...extraShards].join(",") } : {}),
						TEST_MIGRATIONS: migrations,
						TEST_WRANGLER_NAMES: declaredNames,
					},
				},
			}),
		],
		test: {
			// Some tests drive hundreds of deliveries through real local D1; on a shared 2-core machine
			// they can take several seconds. Timing is never asserted, only counts and states.
			testTimeout: 30_000,
			setupFiles: ["./test/setup.ts"],
			// Node-side tests of the command-line tools: vitest.node.config.ts.
			exclude: [...configDefaults.exclude, "test/node/**"],
			// The Worker's structured log lines are asserted on where they matter; keep CI output readable.
			onConsoleLog: (line: string) => process.env.SHOW_LOGS === "1" || !line.startsWith('{"level":'),
		},
	};
});
