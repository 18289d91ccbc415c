/**
 * A RECONCILE job: page the list API over one window, compare each page with local versions in
 * one query, and send every resource that is missing locally or newer than ours to EVENTS as a
 * snapshot, so the single writer applies it and first-observation effects fire as for webhooks.
 * At most MAX_PAGES_PER_INVOCATION pages per invocation; the resume point is stored in D1 and a
 * continuation job is queued. Memory holds one page at a time.
 *
 * The window is not done until its snapshots are applied: each snapshot names its window, and one
 * that dead-letters fails the window and the run (src/reconcile/dead-letters.ts).
 */
import {
	addRunProgress,
	advanceWatermarks,
	finishRun,
	readWindow,
	saveWindowProgress,
	type WindowProgressRow,
	type WindowStatus,
} from "../db/reconcile";
import { resourceVersions } from "../db/resources";
import { layoutHolds, type Shard, type Shards, shardOfResource } from "../db/shards";
import { type Env, getShards, parseReconcileConfig, type ReconcileConfig } from "../env";
import { errorMessage, log } from "../log";
import type { ResourceSnapshot } from "../providers/types";
import { messageBytes, sendSnapshotMessages } from "../queue/enqueue";
import type { ReconcileJob, SnapshotMessage } from "../queue/messages";
import { backoff, iso } from "../time";
import { ApiClient, type ClientDeps, defaultDeps, MAX_RETRY_AFTER_SECONDS } from "./client";
import { isAsked } from "./refresh";

/** 10 pages: <= 30 API attempts + 10 queue sends + 1 continuation, under the free plan's 50 subrequests. */
export const MAX_PAGES_PER_INVOCATION = 10;

/**
 * Each page looks its versions up in every shard it touches, one D1 query each: with S shards a
 * page can cost S queries, so an invocation takes MAX_PAGES_PER_INVOCATION / S pages (at least
 * one) and stays at about a dozen D1 queries, under the free plan's 50, whatever the shard count.
 */
export function pagesPerInvocation(shards: number): number {
	return Math.max(1, Math.floor(MAX_PAGES_PER_INVOCATION / shards));
}
export const MAX_RESTARTS = 3;
export const MAX_RETRIES = 5;
interface Progress {
	pages: number;
	seen: number;
	repaired: number;
	token: string | null;
	restarts: number;
	retries: number;
	done: boolean;
	failed: string | null;
	/** Seconds until the continuation should run (0: at once). */
	delaySeconds: number;
	errors: string[];
	/** What this invocation dropped or skipped: reported in the run, though the window goes on. */
	notes: string[];
}

/** Sends the snapshots (each naming its window); returns those too large for a queue message, unsent. */
async function sendSnapshots(
	env: Env,
	config: ReconcileConfig,
	job: ReconcileJob,
	snapshots: ResourceSnapshot[],
): Promise<{ sent: number; tooLarge: { id: string; bytes: number }[] }> {
	const window = { wallet: job.wallet, idx: job.idx };
	const provider = config.provider.name;
	const bodies = snapshots.map(
		(resource): SnapshotMessage => ({ kind: "snapshot", provider, resource, runId: job.runId, window }),
	);
	const { sent, tooLarge } = await sendSnapshotMessages(env.EVENTS, bodies);
	return { sent, tooLarge: tooLarge.map((m) => ({ id: m.resource.id, bytes: messageBytes(m) })) };
}

/**
 * One page: the drifted resources, found with one D1 query per shard whatever the page size, the
 * shards in parallel (src/db/shards.ts). Versions are looked up by (wallet, id): an id is unique
 * only within its wallet (docs/providers.md 1.4).
 */
async function drifted(
	shards: Shards,
	config: ReconcileConfig,
	items: ResourceSnapshot[],
): Promise<ResourceSnapshot[]> {
	if (items.length === 0) return [];
	const provider = config.provider.name;
	const { type } = config.api;
	// Keyed as the apply step keys them: a sender without wallets stores its resources under "".
	const key = (wallet: string, id: string) => `${wallet}\n${id}`;
	const groups = new Map<string, { shard: Shard; wallet: string; ids: string[] }>();
	for (const i of items) {
		const wallet = i.wallet ?? "";
		const shard = shardOfResource(shards, { provider, type, wallet, id: i.id });
		const at = `${shard.index}\n${wallet}`;
		const group = groups.get(at) ?? { shard, wallet, ids: [] };
		group.ids.push(i.id);
		groups.set(at, group);
	}
	const found = await Promise.all(
		[...groups.values()].map(async (g) =>
			(await resourceVersions(g.shard.db, provider, type, g.wallet, JSON.stringify(g.ids))).map(
				(r) => [key(g.wallet, r.id), r.version] as const,
			),
		),
	);
	const local = new Map(found.flat());
	return items.filter((i) => {
		const v = local.get(key(i.wallet ?? "", i.id));
		return v === undefined || i.version > v;
	});
}

/** 30 s, 60 s, 120 s ... between invocations after consecutive failures. */
const backoffSeconds = (retries: number) => backoff(retries, 30, MAX_RETRY_AFTER_SECONDS);

export async function runWindow(env: Env, job: ReconcileJob, deps: ClientDeps = defaultDeps()): Promise<void> {
	const db = env.DB;
	const key = [job.runId, job.wallet, job.idx] as const;
	const w = await readWindow(db, ...key);
	if (w?.status !== "pending") return; // a duplicate job, or a window already finished

	const p: Progress = {
		pages: 0,
		seen: 0,
		repaired: 0,
		token: w.page_token,
		restarts: w.restarts,
		retries: w.retries,
		done: false,
		failed: null,
		delaySeconds: 0,
		errors: [],
		notes: [],
	};
	const parsed = parseReconcileConfig(env);
	const shards = getShards(env);
	if (!parsed.ok) {
		p.failed = `configuration: ${parsed.error}`;
	} else if (!(await layoutHolds(shards, deps.now()))) {
		// Versions looked up under a changed list are not found: every order would look missing.
		p.failed = "configuration: DB_SHARDS does not match the layout its shards recorded";
	} else {
		const config = parsed.config;
		const { filterField } = config;
		const client = new ApiClient(config, deps);
		const filter = `${filterField}>=${iso(w.from_ms)} AND ${filterField}<${iso(w.to_ms)}`;
		const pages = pagesPerInvocation(shards.all.length);
		for (let i = 0; i < pages && !p.done && !p.failed && p.delaySeconds === 0; i++) {
			const res = await client.listPage(job.wallet, {
				filter,
				orderBy: `${filterField} asc`,
				pageToken: p.token,
			});
			if (!res.ok) {
				const e = res.error;
				if (e.kind === "invalid_page_token") {
					// Tokens expire after ~48 h: start the window again (re-applying is idempotent).
					p.restarts++;
					p.token = null;
					if (p.restarts > MAX_RESTARTS) p.failed = "INVALID_PAGE_TOKEN: too many restarts";
				} else if (e.kind === "rate_limited") {
					// Counted like an outage, so a provider that keeps answering 429 fails the window in bounded time;
					// Retry-After is a floor under the same backoff.
					p.retries++;
					p.errors.push(`rate limited: ${e.message}`);
					if (p.retries > MAX_RETRIES) p.failed = `rate limited ${p.retries} times in a row: ${e.message}`;
					else
						p.delaySeconds = Math.min(
							MAX_RETRY_AFTER_SECONDS,
							Math.max(e.retryAfterSeconds, backoffSeconds(p.retries)),
						);
				} else if (e.kind === "invalid_response") {
					p.failed = `invalid response: ${e.message}`;
				} else if (e.kind === "unavailable") {
					p.retries++;
					p.errors.push(`unavailable: ${e.message}`);
					if (p.retries > MAX_RETRIES) p.failed = `provider unavailable: ${e.message}`;
					else p.delaySeconds = backoffSeconds(p.retries);
				} else if (e.kind === "unauthenticated") {
					p.failed = `credentials rejected (${e.httpStatus} ${e.code}): ${e.message}`;
				} else {
					p.failed = `${e.httpStatus} ${e.code}${e.reason ? ` ${e.reason}` : ""}: ${e.message}`;
				}
				continue;
			}
			p.retries = 0;
			p.pages++;
			const snapshots: ResourceSnapshot[] = [];
			const foreign: string[] = [];
			let malformed = 0;
			for (const item of res.value.items) {
				const s = config.api.snapshot(item, job.wallet);
				// Another type would be looked up under the API's type, found missing and re-sent every run.
				if (!s || s.type !== config.api.type) malformed++;
				// The list is per wallet: an order naming another wallet is not this window's to apply (ids
				// are unique only within a wallet, docs/providers.md 1.4). A sender without wallets keys its
				// resources with none, as its webhooks do (ProviderApi.snapshot).
				else if (!isAsked(config, s, job.wallet)) foreign.push(`${s.id} of ${s.wallet}`);
				else snapshots.push(s);
			}
			if (malformed > 0) {
				p.errors.push(`an item of the list is not a ${config.api.type}`);
				p.notes.push(`dropped ${malformed} item(s) that are not a ${config.api.type}`);
			}
			if (foreign.length > 0) {
				p.notes.push(`dropped ${foreign.length} item(s) of another wallet (${foreign.slice(0, 3).join(", ")})`);
			}
			p.seen += res.value.items.length;
			const repair = await drifted(shards, config, snapshots);
			const { sent, tooLarge } = await sendSnapshots(env, config, job, repair);
			// Skipped, not held: it can never fit, so holding the window would stall every later run on it.
			for (const t of tooLarge.slice(0, 3)) {
				p.notes.push(`snapshot ${t.id} too large for a queue message (${t.bytes} bytes), skipped`);
			}
			if (tooLarge.length > 3) p.notes.push(`${tooLarge.length - 3} more snapshots too large, skipped`);
			p.repaired += sent;
			p.token = res.value.nextPageToken;
			if (p.token === null) p.done = true;
		}
	}
	await saveProgress(db, job, w, p, deps.now());
	if (!p.done && !p.failed) {
		await env.RECONCILE.send(job, p.delaySeconds > 0 ? { delaySeconds: p.delaySeconds } : undefined);
	}
	if (p.notes.length > 0)
		log("warn", "reconcile_items_dropped", { runId: job.runId, wallet: job.wallet, idx: job.idx, notes: p.notes });
	log(p.failed ? "error" : "info", "reconcile_window", {
		runId: job.runId,
		wallet: job.wallet,
		idx: job.idx,
		pages: p.pages,
		seen: p.seen,
		repaired: p.repaired,
		state: p.failed ? "failed" : p.done ? "done" : "continues",
		error: p.failed,
	});
}

/**
 * One D1 batch: the window's progress and the run's counters; when the window ends, the run's
 * completion and, if every window of the run is done, the watermark of its wallets.
 */
async function saveProgress(
	db: D1Database,
	job: ReconcileJob,
	before: WindowProgressRow,
	p: Progress,
	nowMs: number,
): Promise<void> {
	const status: WindowStatus = p.failed ? "failed" : p.done ? "done" : "pending";
	const lastError = p.failed ?? p.errors.at(-1) ?? null;
	const statements = [
		saveWindowProgress(db, {
			runId: job.runId,
			wallet: job.wallet,
			idx: job.idx,
			status,
			pages: p.pages,
			seen: p.seen,
			repaired: p.repaired,
			token: p.token,
			restarts: p.restarts,
			retries: p.retries,
			lastError,
			pagesBefore: before.pages,
		}),
		addRunProgress(
			db,
			job.runId,
			p.pages,
			p.seen,
			p.repaired,
			status === "done" ? 1 : 0,
			status === "failed" ? 1 : 0,
			p.failed || p.notes.length > 0
				? `${job.wallet}#${job.idx}: ${[p.failed, ...p.notes].filter((x) => x !== null).join("; ")}`
				: null,
		),
	];
	if (status !== "pending") {
		// The watermark advances only when every window of the run is done.
		statements.push(finishRun(db, job.runId, nowMs), advanceWatermarks(db, job.runId, nowMs));
	}
	await db.batch(statements);
}

export async function consumeReconcile(batch: MessageBatch<ReconcileJob>, env: Env, deps?: ClientDeps): Promise<void> {
	for (const m of batch.messages) {
		try {
			if (m.body?.kind !== "reconcile_window") {
				log("error", "unknown_reconcile_message", { id: m.id });
				m.ack();
				continue;
			}
			await runWindow(env, m.body, deps);
			m.ack();
		} catch (err) {
			// D1 or the queue failed: run the job again later; it resumes from the token in D1.
			log("error", "reconcile_window_failed", { error: errorMessage(err), attempts: m.attempts });
			m.retry({ delaySeconds: backoff(m.attempts, 30, 600) });
		}
	}
}
