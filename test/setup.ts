import { applyD1Migrations, env } from "cloudflare:test";
import { getShards } from "../src/env";
import { rejectionFlush } from "../src/ingress/rejections";

// Rejections are written in one batch per interval (src/ingress/rejections.ts). Tests that are not
// about that interval flush at once, so a test reads what it caused; test/ingress/flood.test.ts
// runs the real interval.
rejectionFlush.intervalMs = 0;

// Setup files run before each test file; applyD1Migrations skips what is already applied.
// Every shard carries the whole schema (TEST_SHARDS=3 runs the suite over three; src/db/shards.ts).
for (const { db } of getShards(env).all) await applyD1Migrations(db, env.TEST_MIGRATIONS);
