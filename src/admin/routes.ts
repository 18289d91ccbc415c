/** The admin API (docs/design.md): JSON only, every list `{ items, nextCursor }`. */
import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { isDeliveryStatus } from "../db/deliveries";
import { isEffectStatus } from "../db/effects";
import { startHandRetry } from "../effects/executor";
import { getShards } from "../env";
import { PROVIDER_NAMES, reconciledProvider } from "../providers";
import { replayDeliveries } from "../queue/replay";
import { startRun } from "../reconcile/planner";
import { refreshResource } from "../reconcile/refresh";
import { lastRun, listRuns } from "../reconcile/report";
import { adminAuth } from "./auth";
import { readMetrics } from "./metrics";
import { parseCursor, parseLimit, parseShardCursor } from "./pagination";
import { getDelivery, getResource, listDeliveries, listEffects, listRejections } from "./views";

const bad = (message: string) => ({ error: message });

export function adminRoutes(): Hono<AppEnv> {
	const app = new Hono<AppEnv>();
	app.use("*", adminAuth());

	app.get("/deliveries", async (c) => {
		const q = c.req.query();
		const shards = getShards(c.env);
		const cursor = parseShardCursor(q.cursor, shards.all.length);
		if (cursor === null) return c.json(bad("invalid cursor"), 400);
		const status = q.status || undefined;
		if (status !== undefined && !isDeliveryStatus(status)) return c.json(bad("unknown status"), 400);
		const filter = { provider: q.provider || undefined, status, event: q.event || undefined };
		return c.json(await listDeliveries(shards, filter, cursor, parseLimit(q.limit)));
	});

	app.get("/deliveries/:provider/:messageId", async (c) => {
		const d = await getDelivery(getShards(c.env), c.env.ARCHIVE, c.req.param("provider"), c.req.param("messageId"));
		return d ? c.json(d) : c.json(bad("not found"), 404);
	});

	app.post("/deliveries/:provider/:messageId/replay", async (c) => {
		const provider = c.req.param("provider");
		const messageId = c.req.param("messageId");
		const d = await getDelivery(getShards(c.env), c.env.ARCHIVE, provider, messageId);
		if (!d) return c.json(bad("not found"), 404);
		if (d.rawBody === null) return c.json(bad("raw body no longer kept in D1 or the archive"), 409);
		const replayed = await replayDeliveries(c.env, { provider, messageId, shard: d.shard }, Date.now(), 1);
		return c.json({ replayed }, 202);
	});

	app.post("/replay", async (c) => {
		let body: Record<string, unknown>;
		try {
			body = (await c.req.json()) ?? {};
		} catch {
			return c.json(bad("body must be JSON"), 400);
		}
		const { provider, status, since } = body;
		if (provider !== undefined && !PROVIDER_NAMES.includes(provider as never))
			return c.json(bad("unknown provider"), 400);
		if (status !== undefined && !isDeliveryStatus(status)) return c.json(bad("unknown status"), 400);
		const sinceMs = since === undefined ? undefined : typeof since === "number" ? since : Date.parse(String(since));
		if (sinceMs !== undefined && !Number.isFinite(sinceMs))
			return c.json(bad("since must be an ISO time or epoch ms"), 400);
		const replayed = await replayDeliveries(
			c.env,
			{ provider: provider as string | undefined, status: status as string | undefined, since: sinceMs },
			Date.now(),
		);
		return c.json({ replayed });
	});

	app.get("/rejections", async (c) => {
		const cursor = parseCursor(c.req.query("cursor"));
		if (cursor === null) return c.json(bad("invalid cursor"), 400);
		return c.json(await listRejections(c.env.DB, cursor, parseLimit(c.req.query("limit"))));
	});

	app.get("/resources/:provider/:type/:id", async (c) => {
		const { provider, type, id } = c.req.param();
		const r = await getResource(getShards(c.env), provider, type, id, c.req.query("wallet") ?? null);
		switch (r.found) {
			case "one":
				return c.json(r.resource);
			case "ambiguous":
				return c.json({ error: "ambiguous", wallets: r.wallets }, 409);
			case "none":
				return c.json(bad("not found"), 404);
		}
	});

	// The check button's API: the resource as its sender's API holds it now, through the one writer
	// (src/reconcile/refresh.ts). Only the reconciled sender's API type has one.
	app.post("/resources/:provider/:type/:id/refresh", async (c) => {
		const { provider, type, id } = c.req.param();
		const sender = reconciledProvider();
		if (sender?.name !== provider || sender.api.type !== type)
			return c.json(bad("no API serves this provider and type"), 404);
		let wallet = c.req.query("wallet") || null;
		if (wallet === null) {
			const local = await getResource(getShards(c.env), provider, type, id, null);
			if (local.found === "ambiguous") return c.json({ error: "ambiguous", wallets: local.wallets }, 409);
			if (local.found === "none") return c.json(bad(`unknown ${type}: name its wallet with ?wallet=`), 404);
			// Null for a sender without wallets: its only account is asked (refreshResource).
			wallet = local.resource.wallet;
		}
		const r = await refreshResource(c.env, wallet, id);
		if (r.ok) {
			const { version, status } = r.snapshot;
			return c.json({ queued: true, wallet: r.account, id, version, status }, 202);
		}
		switch (r.reason) {
			case "not_found":
				return c.json({ error: "not_found", message: r.message }, 404);
			case "no_account":
			case "invalid_id":
				return c.json(bad(r.message), 400);
			case "not_configured":
				return c.json({ error: "not_configured", message: r.message }, 409);
			case "unavailable":
			case "not_the_resource":
				return c.json({ error: r.reason, message: r.message }, 503, { "Retry-After": "10" });
		}
	});

	app.get("/effects", async (c) => {
		const status = c.req.query("status") || undefined;
		if (status !== undefined && !isEffectStatus(status)) return c.json(bad("unknown status"), 400);
		const shards = getShards(c.env);
		const cursor = parseShardCursor(c.req.query("cursor"), shards.all.length);
		if (cursor === null) return c.json(bad("invalid cursor"), 400);
		return c.json(await listEffects(shards, status, cursor, parseLimit(c.req.query("limit"))));
	});

	app.post("/effects/:id/retry", async (c) => {
		const raw = c.req.param("id");
		// Effect ids name their shard (src/db/shards.ts): up to 16 digits.
		const id = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : null;
		if (id === null || !Number.isSafeInteger(id)) return c.json(bad("not found"), 404);
		const retry = await startHandRetry(c.env, c.get("config"), id, Date.now());
		if (retry.outcome === "not_found") return c.json(bad("not found"), 404);
		if (retry.outcome === "not_failed") return c.json(bad(`effect is ${retry.status}, not failed`), 409);
		c.executionCtx.waitUntil(retry.run);
		return c.json({ id, status: "pending" }, 202);
	});

	app.get("/metrics", async (c) => c.json(await readMetrics(getShards(c.env), Date.now(), await lastRun(c.env.DB))));

	app.post("/reconcile", async (c) => {
		const run = await startRun(c.env, "admin", Date.now());
		return c.json({ runId: run.runId, windows: run.windows, error: run.error }, 202);
	});

	app.get("/reconcile/runs", async (c) => {
		const cursor = parseCursor(c.req.query("cursor"));
		if (cursor === null) return c.json(bad("invalid cursor"), 400);
		return c.json(await listRuns(c.env.DB, cursor, parseLimit(c.req.query("limit"))));
	});

	app.notFound((c) => c.json(bad("not found"), 404));
	return app;
}
