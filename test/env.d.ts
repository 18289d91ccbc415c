import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../src/env";

declare global {
	namespace Cloudflare {
		interface Env extends WorkerEnv {
			TEST_MIGRATIONS: D1Migration[];
			/** The queue, cron and [vars] names wrangler.toml declares (vitest.config.ts). */
			TEST_WRANGLER_NAMES: {
				producers: { binding: string; queue: string }[];
				consumers: { queue: string; deadLetterQueue: string | null; maxRetries: number | null }[];
				crons: string[];
				vars: string[];
			};
		}
	}
}
