/**
 * The D1 schema. This file is the source of `migrations/` (`npm run db:generate`).
 * Times are epoch milliseconds (integers) so that comparisons and indexes stay cheap.
 */
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** The columns of a delivery row, shared by `deliveries` and its scratch copy `delivery_moves`. */
const deliveryColumns = () => ({
	// No AUTOINCREMENT: it writes a sqlite_sequence row on every insert, a duplicate's included
	// (test/scale/rows-written.test.ts). A new row takes max(id) + 1; retention deletes the oldest
	// rows, never the newest, and the archive puts rows back under their own id, so ids still grow.
	id: integer("id").primaryKey(),
	provider: text("provider").notNull(),
	messageId: text("message_id").notNull(),
	event: text("event").notNull(),
	/** received -> enqueued -> processed | stale | ignored | failed */
	status: text("status").notNull(),
	rawBody: text("raw_body"),
	bodyBytes: integer("body_bytes").notNull(),
	/** The sender's own attempt counter (docs/providers.md 1.3), for audit. */
	providerAttempt: integer("provider_attempt"),
	/** The sender's attempt id where it has one (docs/providers.md 2), for audit. */
	attemptRef: text("attempt_ref"),
	/** The few non-secret headers the provider's parse() reads (JSON), so re-parsing matches ingress. */
	headers: text("headers"),
	/** Why a delivery was ignored (event not modelled, unsupported version). */
	note: text("note"),
	resourceType: text("resource_type"),
	/** The resource's scope where ids are unique only within one (docs/providers.md 1.4: a wallet); "" elsewhere. */
	resourceWallet: text("resource_wallet"),
	resourceId: text("resource_id"),
	resourceVersion: integer("resource_version"),
	receivedAt: integer("received_at").notNull(),
	/** Time of the last status change or send; the sweep measures staleness from it. */
	statusAt: integer("status_at").notNull(),
	/** Who may send this row to the queue now (see src/ingress/inbox.ts). */
	sendToken: text("send_token"),
	sendTokenAt: integer("send_token_at"),
	/** Queue consumer attempts. */
	attempts: integer("attempts").notNull().default(0),
	duplicates: integer("duplicates").notNull().default(0),
	lastDuplicateAt: integer("last_duplicate_at"),
	lastError: text("last_error"),
	processedAt: integer("processed_at"),
	/** Milliseconds from request start to answer, new deliveries only (the ack-latency alert). */
	ackMs: integer("ack_ms"),
	/** The sender's own event time (epoch ms) where the payload has one: end-to-end lag is processed_at minus it. */
	eventAt: integer("event_at"),
	/** When the raw body moved to the R2 archive (raw_body is then NULL; src/sweep/archive.ts). */
	archivedAt: integer("archived_at"),
	/**
	 * Which configured secret verified the delivery, by its 0-based position in the provider's
	 * secrets variable (never the value): the console's rotation status reads it.
	 */
	secretPosition: integer("secret_position"),
});

/**
 * The inbox: one row per provider delivery, unique on (provider, message_id). The unique key is
 * the dedupe window (kept `DEDUPE_RETENTION_DAYS`); the raw body is the replay source: moved to
 * the R2 archive once the delivery is settled (src/sweep/archive.ts), or without the archive kept
 * `RETENTION_DAYS`, then set to NULL.
 */
export const deliveries = sqliteTable("deliveries", deliveryColumns(), (t) => [
	uniqueIndex("deliveries_provider_message_id").on(t.provider, t.messageId),
	// Only deliveries not applied yet (received, enqueued, failed): the sweep's and the alerts' work
	// list. Keyed and filtered on columns the `enqueued` mark does not write, so the mark writes no
	// entry, and applying a delivery (processed_at set) only removes one, which D1 does not count as
	// a row written. Every transition to received/enqueued/failed clears processed_at
	// (src/db/deliveries.ts). Was (status, status_at) over every row: 2 more rows per delivery.
	index("deliveries_open").on(t.receivedAt).where(sql`processed_at IS NULL`),
	index("deliveries_received_at").on(t.receivedAt),
	index("deliveries_resource").on(t.provider, t.resourceType, t.resourceWallet, t.resourceId),
	// Only settled rows whose body is still in D1: the archive's work list, empty once it has
	// caught up, so each sweep reads its chunk without scanning archived rows.
	index("deliveries_to_archive")
		.on(t.statusAt)
		.where(sql`raw_body IS NOT NULL AND status IN ('processed', 'stale', 'ignored')`),
	// Deliveries verified by any secret but the first: rare outside a rotation, so the rotation
	// status reads seven days of them without scanning every delivery.
	index("deliveries_older_secret").on(t.provider, t.secretPosition, t.receivedAt).where(sql`secret_position > 0`),
]);

/**
 * Empty between statements: the archive (src/sweep/archive.ts) copies the rows it moves here,
 * deletes them and inserts them back without their body, inside one D1 batch. SQLite frees the
 * space of a row only when the row is deleted (a shrinking UPDATE leaves its page as full as it
 * was), so this is how an archived body stops counting toward the database's size.
 */
export const deliveryMoves = sqliteTable("delivery_moves", deliveryColumns());

/**
 * The local mirror of provider state. Only src/apply writes it (one writer). A resource is keyed
 * by (provider, type, wallet, id): a sender's ids may be unique only within a wallet
 * (docs/providers.md 1.4); senders without such a scope use wallet "".
 */
export const resources = sqliteTable(
	"resources",
	{
		provider: text("provider").notNull(),
		type: text("type").notNull(),
		id: text("id").notNull(),
		wallet: text("wallet").notNull().default(""),
		version: integer("version").notNull(),
		status: text("status").notNull(),
		/** The provider's rank of `status`: decides a tie of equal versions (docs/design.md, delivery statuses). */
		statusRank: integer("status_rank").notNull().default(0),
		data: text("data").notNull(),
		updatedAt: integer("updated_at").notNull(),
		/** webhook | reconcile */
		source: text("source").notNull(),
	},
	// No index on updated_at: no query reads by it, and it cost a row written per state change.
	(t) => [primaryKey({ columns: [t.provider, t.type, t.wallet, t.id] })],
);

/**
 * The effects outbox: one row per (resource, effect kind), written in the same D1 batch as the
 * state change that first observed it, executed after commit (src/effects/).
 */
export const effects = sqliteTable(
	"effects",
	{
		// No AUTOINCREMENT (a sqlite_sequence row written per effect): ids take max(id) + 1, and
		// effect rows are never deleted, so an id is never reused.
		id: integer("id").primaryKey(),
		provider: text("provider").notNull(),
		resourceType: text("resource_type").notNull(),
		resourceWallet: text("resource_wallet").notNull().default(""),
		resourceId: text("resource_id").notNull(),
		kind: text("kind").notNull(),
		/** pending | done | failed */
		status: text("status").notNull(),
		/** JSON snapshot of the resource as first observed. */
		payload: text("payload").notNull(),
		attempts: integer("attempts").notNull().default(0),
		lastError: text("last_error"),
		createdAt: integer("created_at").notNull(),
		/** An executor holds the effect until then; after it, the sweep may take it over. */
		claimedUntil: integer("claimed_until").notNull().default(0),
		doneAt: integer("done_at"),
	},
	(t) => [
		uniqueIndex("effects_resource_kind").on(t.provider, t.resourceType, t.resourceWallet, t.resourceId, t.kind),
		// Only effects not done: a claim (claimed_until) writes no entry and "done" only removes one.
		index("effects_open").on(t.status).where(sql`status = 'pending' OR status = 'failed'`),
	],
);

/** Settled totals per currency, in minor units; written only by the `settled` effect. */
export const settledTotals = sqliteTable("settled_totals", {
	currency: text("currency").primaryKey(),
	count: integer("count").notNull().default(0),
	amount: integer("amount").notNull().default(0),
});

/**
 * Metadata of rejected requests; never the body or the signature header (docs/design.md invariant 1).
 * A ring of REJECTION_LOG_CAP slots (`id = seq % cap`, INSERT OR REPLACE), so a flood of junk
 * overwrites the oldest rows instead of filling D1.
 */
export const rejections = sqliteTable(
	"rejections",
	{
		id: integer("id").primaryKey(),
		seq: integer("seq").notNull(),
		provider: text("provider").notNull(),
		reason: text("reason").notNull(),
		status: integer("status").notNull(),
		size: integer("size").notNull(),
		ip: text("ip"),
		at: integer("at").notNull(),
	},
	(t) => [uniqueIndex("rejections_seq").on(t.seq), index("rejections_at").on(t.at)],
);

/** Rejections counted per minute, provider and reason: metrics and the signature-failure alert. */
export const rejectionCounts = sqliteTable(
	"rejection_counts",
	{
		minute: integer("minute").notNull(),
		provider: text("provider").notNull(),
		reason: text("reason").notNull(),
		count: integer("count").notNull(),
	},
	(t) => [primaryKey({ columns: [t.minute, t.provider, t.reason] })],
);

/** One row per alert rule: whether it is firing, so each incident alerts once and clears once. */
export const alertState = sqliteTable("alert_state", {
	name: text("name").primaryKey(),
	firing: integer("firing").notNull(),
	since: integer("since").notNull(),
	detail: text("detail"),
});

/** One reconciliation run (src/reconcile/): the run report. */
export const reconcileRuns = sqliteTable(
	"reconcile_runs",
	{
		id: text("id").primaryKey(),
		/** cron | admin */
		trigger: text("trigger").notNull(),
		/** running | done | failed */
		status: text("status").notNull(),
		wallets: text("wallets").notNull(),
		periodFrom: integer("period_from").notNull(),
		periodTo: integer("period_to").notNull(),
		windowsPlanned: integer("windows_planned").notNull(),
		windowsDone: integer("windows_done").notNull().default(0),
		windowsFailed: integer("windows_failed").notNull().default(0),
		pages: integer("pages").notNull().default(0),
		ordersSeen: integer("orders_seen").notNull().default(0),
		repaired: integer("repaired").notNull().default(0),
		/** JSON array of the last errors (bounded). */
		errors: text("errors").notNull().default("[]"),
		startedAt: integer("started_at").notNull(),
		finishedAt: integer("finished_at"),
	},
	(t) => [index("reconcile_runs_started").on(t.startedAt)],
);

/** One time window of one wallet in a run: the unit of work of the RECONCILE queue. */
export const reconcileWindows = sqliteTable(
	"reconcile_windows",
	{
		runId: text("run_id").notNull(),
		wallet: text("wallet").notNull(),
		idx: integer("idx").notNull(),
		fromMs: integer("from_ms").notNull(),
		toMs: integer("to_ms").notNull(),
		/** pending | done | failed */
		status: text("status").notNull(),
		pages: integer("pages").notNull().default(0),
		ordersSeen: integer("orders_seen").notNull().default(0),
		repaired: integer("repaired").notNull().default(0),
		/** Where the next invocation resumes; D1, not the message, holds it, so a retry never re-pages. */
		pageToken: text("page_token"),
		/** INVALID_PAGE_TOKEN restarts (bounded). */
		restarts: integer("restarts").notNull().default(0),
		/** Consecutive transient failures (bounded). */
		retries: integer("retries").notNull().default(0),
		lastError: text("last_error"),
	},
	(t) => [primaryKey({ columns: [t.runId, t.wallet, t.idx] })],
);

/** Per wallet: the end of the last period every window of a run covered. */
export const reconcileWatermarks = sqliteTable("reconcile_watermarks", {
	wallet: text("wallet").primaryKey(),
	completedTo: integer("completed_to").notNull(),
	runId: text("run_id").notNull(),
});

/** Last runs of periodic work, one row each (the sweep: when it last ran and what it did). */
export const heartbeats = sqliteTable("heartbeats", {
	name: text("name").primaryKey(),
	at: integer("at").notNull(),
	/** JSON summary of the run. */
	detail: text("detail").notNull(),
});
