import { defineConfig } from "drizzle-kit";

// Generates SQL into migrations/, which wrangler (`d1 migrations apply`) and the tests
// (`applyD1Migrations`) both apply.
export default defineConfig({
	dialect: "sqlite",
	schema: "./src/db/schema.ts",
	out: "./migrations",
});
