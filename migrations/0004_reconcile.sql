CREATE TABLE `reconcile_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`trigger` text NOT NULL,
	`status` text NOT NULL,
	`wallets` text NOT NULL,
	`period_from` integer NOT NULL,
	`period_to` integer NOT NULL,
	`windows_planned` integer NOT NULL,
	`windows_done` integer DEFAULT 0 NOT NULL,
	`windows_failed` integer DEFAULT 0 NOT NULL,
	`pages` integer DEFAULT 0 NOT NULL,
	`orders_seen` integer DEFAULT 0 NOT NULL,
	`repaired` integer DEFAULT 0 NOT NULL,
	`errors` text DEFAULT '[]' NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `reconcile_runs_started` ON `reconcile_runs` (`started_at`);--> statement-breakpoint
CREATE TABLE `reconcile_watermarks` (
	`wallet` text PRIMARY KEY NOT NULL,
	`completed_to` integer NOT NULL,
	`run_id` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `reconcile_windows` (
	`run_id` text NOT NULL,
	`wallet` text NOT NULL,
	`idx` integer NOT NULL,
	`from_ms` integer NOT NULL,
	`to_ms` integer NOT NULL,
	`status` text NOT NULL,
	`pages` integer DEFAULT 0 NOT NULL,
	`orders_seen` integer DEFAULT 0 NOT NULL,
	`repaired` integer DEFAULT 0 NOT NULL,
	`page_token` text,
	`restarts` integer DEFAULT 0 NOT NULL,
	`retries` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	PRIMARY KEY(`run_id`, `wallet`, `idx`)
);
