import { applyD1Migrations, env } from "cloudflare:test";
import { rejectionFlush } from "../src/ingress/rejections";

// Rejections are written in one batch per interval (src/ingress/rejections.ts). Tests that are not
// about that interval flush at once, so a test reads what it caused; test/ingress/flood.test.ts
// runs the real interval.
rejectionFlush.intervalMs = 0;

// Setup files run before each test file; applyD1Migrations skips what is already applied.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
