import { applyD1Migrations, env } from "cloudflare:test";
import { layoutHolds } from "../src/db/shards";
import { getShards } from "../src/env";
import { rejectionFlush } from "../src/ingress/rejections";
import { resetDb } from "./support/worker";

// Rejections are written in one batch per interval (src/ingress/rejections.ts). Tests that are not
// about that interval flush at once, so a test reads what it caused; test/ingress/flood.test.ts
// runs the real interval.
rejectionFlush.intervalMs = 0;

// Setup files run before each test file; applyD1Migrations skips what is already applied.
// Every shard carries the whole schema (TEST_SHARDS=3 runs the suite over three; src/db/shards.ts).
for (const { db } of getShards(env).all) await applyD1Migrations(db, env.TEST_MIGRATIONS);
// The layout check runs once per isolate (src/db/shards.ts): done here, so the tests that count a
// request's D1 round trips count the request's own.
await resetDb();
await layoutHolds(getShards(env), Date.now());
