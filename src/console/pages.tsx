/** The console's pages (docs/design.md, operator console). Each reads a bounded number of D1 statements. */
import { Hono } from "hono";
import type { Child } from "hono/jsx";
import { readMetrics } from "../admin/metrics";
import { parseCursor, parseShardCursor } from "../admin/pagination";
import { getResource, listDeliveries, listEffects } from "../admin/views";
import { DELIVERY_STATUSES, olderSecretUses } from "../db/deliveries";
import { lastBeat } from "../db/heartbeats";
import { fanOut } from "../db/shards";
import { startHandRetry } from "../effects/executor";
import { getShards, reconcileEnabled, reconcileOffReason } from "../env";
import { PROVIDER_NAMES, providers, reconciledProvider } from "../providers";
import type { ProviderName } from "../providers/model";
import { replayDeliveries } from "../queue/replay";
import { startRun } from "../reconcile/planner";
import { type FetchResult, refreshResource } from "../reconcile/refresh";
import { lastRun, listRuns } from "../reconcile/report";
import { BarChart, COLOURS, LineChart, type Series } from "./charts";
import type { ConsoleContext, ConsoleEnv } from "./env";
import { ago, Choice, iso, Page, PostButton, Table } from "./layout";
import {
	DAY_MS,
	type DeliveryListRow,
	findByMessageId,
	type HourPercentiles,
	readAlerts,
	readDelivery,
	readOverviewCharts,
	readRejections,
	resourceDeliveries,
	runWindows,
} from "./queries";
import { consoleClock } from "./session";

const PAGE_SIZE = 50;

/** The sender whose API the check button and reconciliation call (src/providers/index.ts), if any. */
const API_SENDER = reconciledProvider();
/** Its name in the console's texts (read once: the registry is fixed for a deployment). */
const API_LABEL = API_SENDER?.label ?? "the sender";

/** Flash messages by code: the redirect carries a code, never text, so nothing is reflected. */
const FLASH: Record<string, { text: string; error?: boolean }> = {
	replayed: { text: "Replayed: the delivery is queued again under its message id." },
	not_replayable: { text: "Not replayed: the raw body is no longer retained (RETENTION_DAYS).", error: true },
	retried: { text: "Retry started: the effect runs again with a fresh budget." },
	not_failed: { text: "Not retried: the effect is not failed.", error: true },
	run_started: { text: "Reconciliation run started." },
	run_failed: { text: "The run could not start; its errors are listed below.", error: true },
	checked: {
		text: `Fetched from ${API_LABEL}: the resource as ${API_LABEL} holds it is queued for the one writer; reload in a moment.`,
	},
	check_not_configured: { text: `Not checked: ${API_LABEL} API credentials are not configured.`, error: true },
	check_not_found: { text: `Not checked: ${API_LABEL} does not have this resource in this wallet.`, error: true },
	check_unavailable: { text: `Not checked: ${API_LABEL}'s API did not answer; try again later.`, error: true },
	check_no_account: {
		text: "Not checked: the resource names no wallet to ask the API with; name one (admin API, ?wallet=).",
		error: true,
	},
};

/** The check's outcome as a flash code: one line per reason, so a new reason fails the type check. */
const CHECK_FLASH: Record<Exclude<FetchResult, { ok: true }>["reason"], string> = {
	not_configured: "check_not_configured",
	invalid_id: "check_not_found",
	no_account: "check_no_account",
	not_found: "check_not_found",
	unavailable: "check_unavailable",
	not_the_resource: "check_unavailable",
};

/** Whether (provider, type) is what the sender's API serves: only those resources have a check button. */
function hasApi(provider: string, type: string): boolean {
	const sender = reconciledProvider();
	return sender?.name === provider && sender.api.type === type;
}

const deliveryHref = (provider: string, messageId: string) =>
	`/console/deliveries/${encodeURIComponent(provider)}/${encodeURIComponent(messageId)}`;

function resourceHref(provider: string, type: string, id: string, wallet: string | null) {
	const base = `/console/resources/${encodeURIComponent(provider)}/${encodeURIComponent(type)}/${encodeURIComponent(id)}`;
	return wallet ? `${base}?wallet=${encodeURIComponent(wallet)}` : base;
}

function render(c: ConsoleContext, title: string, body: Child, status: 200 | 404 = 200) {
	const done = c.req.query("done");
	return c.html(
		<Page
			title={title}
			nonce={c.get("nonce")}
			path={new URL(c.req.url).pathname}
			signedIn
			csrf={c.get("csrf")}
			flash={done ? (FLASH[done] ?? null) : null}
		>
			{body}
		</Page>,
		status,
	);
}

const statusClass = (s: string) =>
	s === "failed" ? "bad" : s === "processed" ? "ok" : s === "received" || s === "enqueued" ? "warn" : "muted";

function seconds(ms: number | null): string {
	if (ms === null) return "—";
	return ms < 1000 ? `${ms} ms` : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;
}

function percentileSeries(rows: HourPercentiles[], nowMs: number): Series[] {
	const lastHour = Math.floor(nowMs / 3_600_000);
	const byHour = new Map(rows.map((r) => [r.hour, r]));
	const slots = Array.from({ length: 25 }, (_, i) => byHour.get(lastHour - 24 + i));
	return [
		{ name: "p50", colour: COLOURS.p50 ?? "", values: slots.map((r) => r?.p50 ?? null) },
		{ name: "p99", colour: COLOURS.p99 ?? "", values: slots.map((r) => r?.p99 ?? null) },
	];
}

function latest(rows: HourPercentiles[]): string {
	const n = rows.reduce((a, r) => a + r.n, 0);
	const max99 = Math.max(0, ...rows.map((r) => r.p99 ?? 0));
	return n === 0 ? "No data in the last 24 h." : `${n} deliveries; worst hourly p99 ${seconds(max99)}.`;
}

function DeliveryTable(p: {
	rows:
		| DeliveryListRow[]
		| {
				provider: string;
				messageId: string;
				event: string;
				status: string;
				receivedAt: string | null;
				attempts: number;
				duplicates: number;
				lastError: string | null;
		  }[];
}) {
	const rows = p.rows.map((r) =>
		"message_id" in r
			? { ...r, messageId: r.message_id, receivedAt: iso(r.received_at), lastError: r.last_error }
			: { ...r, receivedAt: r.receivedAt ?? "—" },
	);
	if (rows.length === 0) return <p class="muted">No deliveries match.</p>;
	return (
		<Table heads={["Received", "Provider", "Message id", "Event", "Status", "Attempts", "Duplicates", "Last error"]}>
			{rows.map((r) => (
				<tr>
					<td>{r.receivedAt}</td>
					<td>{r.provider}</td>
					<td>
						<a href={deliveryHref(r.provider, r.messageId)}>{r.messageId}</a>
					</td>
					<td>{r.event}</td>
					<td class={statusClass(r.status)}>{r.status}</td>
					<td>{r.attempts}</td>
					<td>{r.duplicates}</td>
					<td>{r.lastError ?? ""}</td>
				</tr>
			))}
		</Table>
	);
}

function prettyBody(raw: string | null): string {
	if (raw === null) return "(no longer retained: RETENTION_DAYS)";
	try {
		return JSON.stringify(JSON.parse(raw), null, 2);
	} catch {
		return raw;
	}
}

/** How far back the rotation status looks (docs/design.md, operator console). */
const ROTATION_WINDOW_MS = 7 * DAY_MS;

type SecretUse = Awaited<ReturnType<typeof olderSecretUses>>[number];

/** Each shard counts its own deliveries: one line per (provider, secret position) again. */
function sumSecretUses(perShard: SecretUse[][]): SecretUse[] {
	const sums = new Map<string, SecretUse>();
	for (const u of perShard.flat()) {
		const key = `${u.provider}:${u.secret_position}`;
		const sum = sums.get(key);
		sums.set(key, sum ? { ...sum, n: sum.n + u.n, last: Math.max(sum.last, u.last) } : u);
	}
	return [...sums.values()];
}

export function pageRoutes(): Hono<ConsoleEnv> {
	const app = new Hono<ConsoleEnv>();

	app.get("/", async (c) => {
		const db = c.env.DB;
		const shards = getShards(c.env);
		const nowMs = consoleClock.now();
		// Five round trips, in parallel: the admin metrics batch, the last run, the charts batch, the
		// last sweep, and the rotation status (a small partial index).
		const [metrics, run, charts, sweepBeat, olderSecrets] = await Promise.all([
			readMetrics(shards, nowMs, null),
			lastRun(db),
			readOverviewCharts(shards, nowMs),
			lastBeat(db, "sweep"),
			fanOut(shards, (s) => olderSecretUses(s.db, nowMs - ROTATION_WINDOW_MS)).then(sumSecretUses),
		]);
		const config = c.get("config");
		const firing = charts.alerts.filter((a) => a.firing === 1);

		const firstMinute = Math.floor((nowMs - DAY_MS) / 60_000) + 1;
		const outcome = (s: string) => (s === "received" || s === "enqueued" ? "pending" : s);
		const perOutcome = new Map<string, number[]>();
		for (const r of charts.perMinute) {
			const i = r.minute - firstMinute;
			if (i < 0 || i >= 1440) continue;
			const key = outcome(r.status);
			const values = perOutcome.get(key) ?? new Array<number>(1440).fill(0);
			perOutcome.set(key, values);
			values[i] = (values[i] ?? 0) + r.n;
		}
		const deliverySeries: Series[] = ["processed", "pending", "stale", "ignored", "failed"]
			.filter((k) => perOutcome.has(k))
			.map((k) => ({ name: k, colour: COLOURS[k] ?? "#888", values: perOutcome.get(k) ?? [] }));
		const reasonTotals = Object.entries(metrics.rejections.byReason)
			.map(([label, value]) => ({ label, value }))
			.sort((a, b) => b.value - a.value);
		const configured = PROVIDER_NAMES.map((p) => [p, config.keys[p].length] as const);

		return render(
			c,
			"Overview",
			<>
				<div class="grid">
					<section class="card" aria-labelledby="h-health">
						<h2 id="h-health">Health</h2>
						<dl>
							<dt>Configuration</dt>
							<dd class="ok">parses</dd>
							<dt>Senders</dt>
							<dd>
								{configured
									.filter(([, n]) => n > 0)
									.map(([p, n]) => `${p} (${n} secret${n === 1 ? "" : "s"})`)
									.join(", ") || "none configured"}
							</dd>
							<dt>Reconciliation</dt>
							<dd>{reconcileEnabled(c.env) ? "on" : `off (${reconcileOffReason()})`}</dd>
							<dt>Alert target</dt>
							<dd>{config.alertWebhookUrl ? "set" : "unset (alerts only logged)"}</dd>
							<dt>Source allow-list</dt>
							<dd>{config.allowedSourceCidrs ? `${config.allowedSourceCidrs.length} ranges` : "off"}</dd>
							<dt>Last sweep</dt>
							<dd class={sweepBeat && nowMs - sweepBeat.at < 5 * 60_000 ? "" : "warn"}>
								{sweepBeat ? `${iso(sweepBeat.at)} (${ago(sweepBeat.at, nowMs)})` : "never (the cron has not run)"}
							</dd>
							<dt>Last reconcile</dt>
							<dd>
								{run ? (
									<a href="/console/reconcile">
										{run.status}, {run.startedAt} ({run.repaired} repaired)
									</a>
								) : (
									"never"
								)}
							</dd>
						</dl>
					</section>
					<section class="card" aria-labelledby="h-del">
						<h2 id="h-del">Deliveries</h2>
						<p class="big">{metrics.deliveries.total}</p>
						<dl>
							{DELIVERY_STATUSES.map((s) => (
								<>
									<dt>
										<a href={`/console/deliveries?status=${s}`}>{s}</a>
									</dt>
									<dd class={statusClass(s)}>{metrics.deliveries.byStatus[s] ?? 0}</dd>
								</>
							))}
							<dt>Duplicates</dt>
							<dd>
								{metrics.deliveries.duplicates} ({(metrics.deliveries.duplicateRate * 100).toFixed(2)}%)
							</dd>
							<dt>Oldest unprocessed</dt>
							<dd class={metrics.oldestUnprocessedAgeSeconds ? "warn" : ""}>
								{metrics.oldestUnprocessedAgeSeconds === null ? "none" : `${metrics.oldestUnprocessedAgeSeconds} s`}
							</dd>
						</dl>
					</section>
					<section class="card" aria-labelledby="h-eff">
						<h2 id="h-eff">Effects</h2>
						<dl>
							<dt>Pending</dt>
							<dd>{metrics.effects.pending ?? 0}</dd>
							<dt>Failed</dt>
							<dd class={metrics.effects.failed ? "bad" : ""}>
								<a href="/console/effects">{metrics.effects.failed ?? 0}</a>
							</dd>
							<dt>Done</dt>
							<dd>{metrics.effects.done ?? 0}</dd>
						</dl>
						<h2>Settled totals</h2>
						{Object.keys(metrics.settled).length === 0 ? (
							<p class="muted">none yet</p>
						) : (
							<dl>
								{Object.entries(metrics.settled).map(([cur, t]) => (
									<>
										<dt>{cur}</dt>
										<dd>
											{t.amount} minor units, {t.count} orders
										</dd>
									</>
								))}
							</dl>
						)}
					</section>
					<section class="card" aria-labelledby="h-alerts">
						<h2 id="h-alerts">Firing alerts</h2>
						{firing.length === 0 ? (
							<p class="ok">none</p>
						) : (
							<ul>
								{firing.map((a) => (
									<li class="bad">
										<strong>{a.name}</strong> since {ago(a.since, nowMs)}: {a.detail ?? ""}
									</li>
								))}
							</ul>
						)}
						<p>
							<a href="/console/alerts">All alerts</a>
						</p>
					</section>
					<section class="card" aria-labelledby="h-rot">
						<h2 id="h-rot">Secret rotation</h2>
						<p class="muted">
							Deliveries verified by each configured secret, by its position in the list (never its value), over the
							last 7 days. A secret that verified nothing for 7 days can go.
						</p>
						<dl>
							{configured
								.filter(([, n]) => n > 1)
								.flatMap(([p, n]) =>
									Array.from({ length: n - 1 }, (_, k) => {
										const use = olderSecrets.find((u) => u.provider === p && u.secret_position === k + 1);
										return (
											<>
												<dt>
													{p} #{k + 2}
												</dt>
												<dd class={use ? "warn" : "ok"}>
													{use ? `${use.n} deliveries, last ${ago(use.last, nowMs)}` : "none in 7 days: can go"}
												</dd>
											</>
										);
									}),
								)}
						</dl>
						{configured.every(([, n]) => n < 2) ? <p>One secret per sender: no rotation under way.</p> : null}
					</section>
				</div>
				<h2>Last 24 hours</h2>
				<LineChart
					title="Deliveries per minute by outcome"
					series={deliverySeries}
					unit=""
					xLabels={["−24 h", "−12 h", "now"]}
					summary={`${charts.perMinute.reduce((a, r) => a + r.n, 0)} deliveries received in the last 24 h.`}
				/>
				<LineChart
					title="Ack latency (request to answer), hourly p50 and p99, ms"
					series={percentileSeries(charts.ack, nowMs)}
					unit=" ms"
					format={seconds}
					xLabels={["−24 h", "−12 h", "now"]}
					summary={latest(charts.ack)}
				/>
				<LineChart
					title="End-to-end lag (provider event time to processed), hourly p50 and p99, ms"
					series={percentileSeries(charts.lag, nowMs)}
					unit=" ms"
					format={seconds}
					xLabels={["−24 h", "−12 h", "now"]}
					summary={latest(charts.lag)}
				/>
				<BarChart
					title="Rejections by reason, last 24 h"
					bars={reasonTotals}
					empty="No rejected requests in the last 24 h."
				/>
			</>,
		);
	});

	app.get("/deliveries", async (c) => {
		const q = c.req.query();
		const provider = PROVIDER_NAMES.find((p) => p === q.provider);
		const status = DELIVERY_STATUSES.find((s) => s === q.status);
		const messageId = q.messageId?.trim() || undefined;
		const shards = getShards(c.env);
		const cursor =
			parseShardCursor(q.cursor, shards.all.length) ?? parseShardCursor(undefined, shards.all.length) ?? [];
		let table: Child;
		let next: string | null = null;
		if (messageId) {
			table = <DeliveryTable rows={await findByMessageId(shards, messageId, provider)} />;
		} else {
			const page = await listDeliveries(shards, { provider, status }, cursor, PAGE_SIZE);
			table = <DeliveryTable rows={page.items as Parameters<typeof DeliveryTable>[0]["rows"]} />;
			if (page.nextCursor) {
				const params = new URLSearchParams();
				if (provider) params.set("provider", provider);
				if (status) params.set("status", status);
				params.set("cursor", page.nextCursor);
				next = `/console/deliveries?${params}`;
			}
		}
		return render(
			c,
			"Deliveries",
			<>
				<form class="filters" method="get" action="/console/deliveries">
					<Choice id="f-provider" label="Provider" name="provider" options={PROVIDER_NAMES} selected={provider} any />
					<Choice id="f-status" label="Status" name="status" options={DELIVERY_STATUSES} selected={status} any />
					<label for="f-message">
						Message id
						<input id="f-message" name="messageId" value={messageId ?? ""} size={36} />
					</label>
					<button type="submit">Filter</button>
				</form>
				{table}
				{next && (
					<p>
						<a href={next} rel="next">
							Older deliveries
						</a>
					</p>
				)}
			</>,
		);
	});

	app.get("/deliveries/:provider/:messageId", async (c) => {
		const nowMs = consoleClock.now();
		const d = await readDelivery(getShards(c.env), c.req.param("provider"), c.req.param("messageId"), c.env.ARCHIVE);
		if (!d) return render(c, "Delivery not found", <p>No delivery with that provider and message id.</p>, 404);
		const wallet = d.resource_wallet || null;
		const timeline: [string, number | null, string?][] = [
			["Event happened (provider's time)", d.event_at],
			["Received", d.received_at, d.ack_ms === null ? undefined : `answered in ${d.ack_ms} ms`],
			["Last status change", d.status_at, d.status],
			["Last duplicate", d.last_duplicate_at, d.duplicates ? `${d.duplicates} duplicates` : undefined],
			[
				"Processed",
				d.processed_at,
				d.event_at && d.processed_at ? `lag ${seconds(d.processed_at - d.event_at)}` : undefined,
			],
		];
		return render(
			c,
			`Delivery ${d.message_id}`,
			<>
				<dl>
					<dt>Provider</dt>
					<dd>{d.provider}</dd>
					<dt>Message id</dt>
					<dd>{d.message_id}</dd>
					<dt>Event</dt>
					<dd>{d.event}</dd>
					<dt>Status</dt>
					<dd class={statusClass(d.status)}>{d.status}</dd>
					<dt>Resource</dt>
					<dd>
						{d.resource_type && d.resource_id ? (
							<a href={resourceHref(d.provider, d.resource_type, d.resource_id, wallet)}>
								{d.resource_type} {d.resource_id}
								{wallet ? ` (wallet ${wallet})` : ""} v{d.resource_version}
							</a>
						) : (
							"none"
						)}
					</dd>
					<dt>Consumer attempts</dt>
					<dd>{d.attempts}</dd>
					<dt>Provider attempt</dt>
					<dd>
						{d.provider_attempt ?? "—"}
						{d.attempt_ref ? ` (${d.attempt_ref})` : ""}
					</dd>
					<dt>Last error</dt>
					<dd class={d.last_error ? "bad" : ""}>{d.last_error ?? "none"}</dd>
					<dt>Note</dt>
					<dd>{d.note ?? "—"}</dd>
					<dt>Body size</dt>
					<dd>{d.body_bytes} bytes</dd>
				</dl>
				<h2>Timeline</h2>
				<ol>
					{timeline
						.filter(([, t]) => t !== null)
						.sort((a, b) => (a[1] ?? 0) - (b[1] ?? 0))
						.map(([label, t, extra]) => (
							<li>
								<strong>{label}</strong>: <time datetime={iso(t)}>{iso(t)}</time> ({ago(t, nowMs)})
								{extra ? `, ${extra}` : ""}
							</li>
						))}
				</ol>
				<h2>Replay</h2>
				<p>Re-enqueues the stored body under the same message id; the consumer applies it idempotently.</p>
				<PostButton action={`${deliveryHref(d.provider, d.message_id)}/replay`} csrf={c.get("csrf")} label="Replay" />
				<h2>Body</h2>
				<pre>
					<code>{prettyBody(d.raw_body)}</code>
				</pre>
			</>,
		);
	});

	app.post("/deliveries/:provider/:messageId/replay", async (c) => {
		const provider = c.req.param("provider");
		const messageId = c.req.param("messageId");
		const d = await readDelivery(getShards(c.env), provider, messageId, c.env.ARCHIVE);
		if (!d) return render(c, "Delivery not found", <p>No delivery with that provider and message id.</p>, 404);
		const back = deliveryHref(provider, messageId);
		if (d.raw_body === null) return c.redirect(`${back}?done=not_replayable`, 303);
		await replayDeliveries(c.env, { provider, messageId, shard: d.shard }, Date.now(), 1);
		return c.redirect(`${back}?done=replayed`, 303);
	});

	app.get("/resources", async (c) => {
		const q = c.req.query();
		const provider = PROVIDER_NAMES.find((p) => p === q.provider) ?? (PROVIDER_NAMES[0] as ProviderName);
		const type = q.type?.trim() || providers[provider].lookupType;
		const id = q.id?.trim() ?? "";
		const wallet = q.wallet?.trim() || null;
		let result: Child = null;
		if (id && type) {
			const r = await getResource(getShards(c.env), provider, type, id, wallet);
			if (r.found === "one") return c.redirect(resourceHref(provider, type, id, r.resource.wallet), 303);
			result =
				r.found === "none" ? (
					<p role="status">
						No {type} with id {id} from {provider}.
					</p>
				) : (
					<div role="status">
						<p>That id exists in several wallets; pick one:</p>
						<ul>
							{r.wallets.map((w) => (
								<li>
									<a href={resourceHref(provider, type, id, w)}>{w}</a>
								</li>
							))}
						</ul>
					</div>
				);
		}
		return render(
			c,
			"Resources",
			<>
				<form class="filters" method="get" action="/console/resources">
					<Choice id="r-provider" label="Provider" name="provider" options={PROVIDER_NAMES} selected={provider} />
					<label for="r-type">
						Type
						<input id="r-type" name="type" value={type} size={16} />
					</label>
					<label for="r-id">
						Id
						<input id="r-id" name="id" value={id} required size={30} />
					</label>
					<label for="r-wallet">
						Wallet{API_SENDER ? ` (${API_LABEL})` : ""}
						<input id="r-wallet" name="wallet" value={wallet ?? ""} size={20} />
					</label>
					<button type="submit">Find</button>
				</form>
				{result}
			</>,
		);
	});

	// GET the resource fresh from its sender's API and feed it through the one writer (src/reconcile/refresh.ts).
	app.post("/resources/:provider/:type/:id/check", async (c) => {
		const { provider, type, id } = c.req.param();
		const wallet = c.req.query("wallet") || null;
		const back = resourceHref(provider, type, id, wallet);
		if (!hasApi(provider, type)) return c.redirect(`${back}?done=check_not_found`, 303);
		const r = await refreshResource(c.env, wallet, id);
		const done = r.ok ? "checked" : CHECK_FLASH[r.reason];
		return c.redirect(`${back}${back.includes("?") ? "&" : "?"}done=${done}`, 303);
	});

	app.get("/resources/:provider/:type/:id", async (c) => {
		const { provider, type, id } = c.req.param();
		const wallet = c.req.query("wallet") || null;
		const r = await getResource(getShards(c.env), provider, type, id, wallet);
		if (r.found !== "one")
			return render(
				c,
				"Resource not found",
				<p>
					No single resource matches; <a href="/console/resources">search</a>.
				</p>,
				404,
			);
		const res = r.resource;
		const history = await resourceDeliveries(getShards(c.env), provider, type, res.wallet ?? "", id);
		const nowMs = consoleClock.now();
		return render(
			c,
			`${type} ${id}`,
			<>
				<dl>
					<dt>Provider</dt>
					<dd>{res.provider}</dd>
					<dt>Wallet</dt>
					<dd>{res.wallet ?? "—"}</dd>
					<dt>Status</dt>
					<dd>
						<strong>{res.status}</strong>
					</dd>
					<dt>Version</dt>
					<dd>{res.version}</dd>
					<dt>Last change</dt>
					<dd>
						{res.updatedAt} ({ago(res.updatedAt ? Date.parse(res.updatedAt) : null, nowMs)}), from {res.source}
					</dd>
				</dl>
				{hasApi(provider, type) && (res.wallet || !reconciledProvider()?.api.accountScoped) ? (
					<PostButton
						action={`${resourceHref(provider, type, id, null)}/check${res.wallet ? `?wallet=${encodeURIComponent(res.wallet)}` : ""}`}
						csrf={c.get("csrf")}
						label={`Check with ${API_LABEL}`}
					/>
				) : null}
				<h2>Deliveries that built it, in version order</h2>
				{history.length === 0 ? (
					<p class="muted">None stored (reconciliation may have written it, or the rows aged out).</p>
				) : (
					<Table heads={["Version", "Message id", "Event", "Status", "Event time", "Received", "Processed"]}>
						{history.map((h) => (
							<tr>
								<td>{h.resource_version}</td>
								<td>
									<a href={deliveryHref(provider, h.message_id)}>{h.message_id}</a>
								</td>
								<td>{h.event}</td>
								<td class={statusClass(h.status)}>
									{h.status === "stale" ? "stale (older than the stored version, not applied)" : h.status}
								</td>
								<td>{iso(h.event_at)}</td>
								<td>{iso(h.received_at)}</td>
								<td>{iso(h.processed_at)}</td>
							</tr>
						))}
					</Table>
				)}
				<h2>State</h2>
				<pre>
					<code>{JSON.stringify(res.data, null, 2)}</code>
				</pre>
			</>,
		);
	});

	app.get("/effects", async (c) => {
		const shards = getShards(c.env);
		const first = parseShardCursor(undefined, shards.all.length) ?? [];
		const [failed, pending] = await Promise.all([
			listEffects(shards, "failed", first, PAGE_SIZE),
			listEffects(shards, "pending", first, PAGE_SIZE),
		]);
		type Item = {
			id: number;
			provider: string;
			resource: { type: string; id: string };
			kind: string;
			status: string;
			attempts: number;
			lastError: string | null;
			createdAt: string | null;
		};
		const table = (items: Item[], retry: boolean) =>
			items.length === 0 ? (
				<p class="muted">None.</p>
			) : (
				<Table heads={["Id", "Kind", "Resource", "Attempts", "Last error", "Created", ...(retry ? ["Action"] : [])]}>
					{items.map((e) => (
						<tr>
							<td>{e.id}</td>
							<td>{e.kind}</td>
							<td>
								{e.provider} {e.resource.type} {e.resource.id}
							</td>
							<td>{e.attempts}</td>
							<td class={e.lastError ? "bad" : ""}>{e.lastError ?? ""}</td>
							<td>{e.createdAt}</td>
							{retry && (
								<td>
									<PostButton action={`/console/effects/${e.id}/retry`} csrf={c.get("csrf")} label="Retry" />
								</td>
							)}
						</tr>
					))}
				</Table>
			);
		return render(
			c,
			"Effects",
			<>
				<h2>Failed (gave up after 10 attempts)</h2>
				{table(failed.items as Item[], true)}
				{failed.nextCursor && <p class="muted">Showing the newest {PAGE_SIZE}.</p>}
				<h2>Pending</h2>
				{table(pending.items as Item[], false)}
				{pending.nextCursor && <p class="muted">Showing the newest {PAGE_SIZE}.</p>}
			</>,
		);
	});

	app.post("/effects/:id/retry", async (c) => {
		const raw = c.req.param("id");
		const id = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : null;
		if (id === null || !Number.isSafeInteger(id)) return render(c, "Effect not found", <p>No such effect.</p>, 404);
		const retry = await startHandRetry(c.env, c.get("config"), id, Date.now());
		if (retry.outcome === "not_found") return render(c, "Effect not found", <p>No such effect.</p>, 404);
		if (retry.outcome === "not_failed") return c.redirect("/console/effects?done=not_failed", 303);
		c.executionCtx.waitUntil(retry.run);
		return c.redirect("/console/effects?done=retried", 303);
	});

	app.get("/reconcile", async (c) => {
		const cursor = parseCursor(c.req.query("cursor")) ?? Number.MAX_SAFE_INTEGER;
		const runs = await listRuns(c.env.DB, cursor, 10);
		const windows = await runWindows(
			c.env.DB,
			runs.items.map((r) => r.runId),
		);
		const colour: Record<string, string> = { done: "#2da44e", failed: "#cf222e", pending: "#8c959f" };
		return render(
			c,
			"Reconciliation",
			<>
				<p>
					{reconcileEnabled(c.env)
						? `Runs daily; each wallet's period is split into windows paged from ${API_LABEL}'s list API.`
						: `Off: ${reconcileOffReason()} (a run started here records why it cannot run).`}
				</p>
				<PostButton action="/console/reconcile/start" csrf={c.get("csrf")} label="Start a run" />
				{runs.items.length === 0 && <p class="muted">No runs yet.</p>}
				{runs.items.map((r) => {
					const mine = windows.filter((w) => w.run_id === r.runId);
					const wallets = [...new Set(mine.map((w) => w.wallet))];
					const finished = r.windows.done + r.windows.failed;
					return (
						<section class="card" aria-label={`Run ${r.runId}`}>
							<h2>
								Run {r.runId.slice(0, 8)}:{" "}
								<span class={r.status === "failed" ? "bad" : r.status === "done" ? "ok" : "warn"}>{r.status}</span>
							</h2>
							<p>
								<label for={`p-${r.runId}`}>
									Windows {finished} of {r.windows.planned} ({r.windows.failed} failed)
									<progress id={`p-${r.runId}`} value={finished} max={Math.max(1, r.windows.planned)} />
								</label>
							</p>
							<dl>
								<dt>Trigger</dt>
								<dd>{r.trigger}</dd>
								<dt>Period</dt>
								<dd>
									{r.period.from} to {r.period.to}
								</dd>
								<dt>Started / finished</dt>
								<dd>
									{r.startedAt} / {r.finishedAt ?? "running"}
								</dd>
								<dt>Pages, orders seen, repaired</dt>
								<dd>
									{r.pages}, {r.ordersSeen}, {r.repaired}
								</dd>
								{r.errors.length > 0 && (
									<>
										<dt>Errors</dt>
										<dd class="bad">
											<ul>
												{r.errors.map((e) => (
													<li>{e}</li>
												))}
											</ul>
										</dd>
									</>
								)}
							</dl>
							{wallets.map((w) => {
								const ws = mine.filter((x) => x.wallet === w);
								return (
									<div>
										<p class="muted">
											Wallet {w}: {ws.filter((x) => x.status === "done").length}/{ws.length} windows done
										</p>
										<svg
											viewBox={`0 0 ${ws.length * 8} 10`}
											width={ws.length * 8}
											height="10"
											role="img"
											aria-label={`Windows of wallet ${w}`}
										>
											{ws.map((x, i) => (
												<rect x={i * 8} width="7" height="10" fill={colour[x.status] ?? "#8c959f"}>
													<title>{`${iso(x.from_ms)} to ${iso(x.to_ms)}: ${x.status}, ${x.pages} pages, ${x.repaired} repaired${x.last_error ? `, ${x.last_error}` : ""}`}</title>
												</rect>
											))}
										</svg>
									</div>
								);
							})}
						</section>
					);
				})}
				{runs.nextCursor && (
					<p>
						<a href={`/console/reconcile?cursor=${runs.nextCursor}`} rel="next">
							Older runs
						</a>
					</p>
				)}
			</>,
		);
	});

	app.post("/reconcile/start", async (c) => {
		const run = await startRun(c.env, "admin", Date.now());
		return c.redirect(`/console/reconcile?done=${run.error ? "run_failed" : "run_started"}`, 303);
	});

	app.get("/alerts", async (c) => {
		const nowMs = consoleClock.now();
		const alerts = await readAlerts(c.env.DB);
		return render(
			c,
			"Alerts",
			alerts.length === 0 ? (
				<p class="muted">No alert has fired yet.</p>
			) : (
				<Table heads={["Alert", "State", "Since", "Detail"]}>
					{alerts.map((a) => (
						<tr>
							<td>{a.name}</td>
							<td class={a.firing ? "bad" : "ok"}>{a.firing ? "firing" : "resolved"}</td>
							<td>
								{iso(a.since)} ({ago(a.since, nowMs)})
							</td>
							<td>{a.detail ?? ""}</td>
						</tr>
					))}
				</Table>
			),
		);
	});

	app.get("/rejections", async (c) => {
		const nowMs = consoleClock.now();
		const { perHour, latest: samples } = await readRejections(c.env.DB, nowMs);
		const lastHour = Math.floor(nowMs / 3_600_000);
		const totals = new Map<string, number>();
		for (const r of perHour) totals.set(r.reason, (totals.get(r.reason) ?? 0) + r.n);
		const top = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, 6);
		const palette = ["#cf222e", "#0969da", "#bf8700", "#8250df", "#2da44e", "#8c959f"];
		const series: Series[] = top.map(([reason], i) => ({
			name: reason,
			colour: palette[i] ?? "#888",
			values: Array.from(
				{ length: 25 },
				(_, h) => perHour.find((r) => r.reason === reason && r.hour === lastHour - 24 + h)?.n ?? 0,
			),
		}));
		return render(
			c,
			"Rejections",
			<>
				{series.length > 0 ? (
					<LineChart
						title="Rejected requests per hour by reason (top 6)"
						series={series}
						unit=""
						xLabels={["−24 h", "−12 h", "now"]}
						summary={top.map(([r, n]) => `${r}: ${n}`).join(", ")}
					/>
				) : (
					<p class="muted">No rejected requests in the last 24 h.</p>
				)}
				<h2>Latest samples</h2>
				<p class="muted">Metadata only: bodies and signature headers of rejected requests are never stored.</p>
				{samples.length === 0 ? (
					<p class="muted">None.</p>
				) : (
					<Table heads={["At", "Provider", "Reason", "Status", "Size", "Client"]}>
						{samples.map((s) => (
							<tr>
								<td>{iso(s.at)}</td>
								<td>{s.provider}</td>
								<td>{s.reason}</td>
								<td>{s.status}</td>
								<td>{s.size}</td>
								<td>{s.ip ?? "—"}</td>
							</tr>
						))}
					</Table>
				)}
			</>,
		);
	});

	app.all("*", (c) =>
		render(
			c,
			"Not found",
			<p>
				No such page. <a href="/console">Back to the overview</a>.
			</p>,
			404,
		),
	);
	return app;
}
