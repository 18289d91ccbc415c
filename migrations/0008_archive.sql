CREATE TABLE `delivery_moves` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`provider` text NOT NULL,
	`message_id` text NOT NULL,
	`event` text NOT NULL,
	`status` text NOT NULL,
	`raw_body` text,
	`body_bytes` integer NOT NULL,
	`provider_attempt` integer,
	`attempt_ref` text,
	`headers` text,
	`note` text,
	`resource_type` text,
	`resource_wallet` text,
	`resource_id` text,
	`resource_version` integer,
	`received_at` integer NOT NULL,
	`status_at` integer NOT NULL,
	`send_token` text,
	`send_token_at` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`duplicates` integer DEFAULT 0 NOT NULL,
	`last_duplicate_at` integer,
	`last_error` text,
	`processed_at` integer,
	`ack_ms` integer,
	`event_at` integer,
	`archived_at` integer
);
--> statement-breakpoint
ALTER TABLE `deliveries` ADD `archived_at` integer;--> statement-breakpoint
CREATE INDEX `deliveries_to_archive` ON `deliveries` (`status_at`) WHERE raw_body IS NOT NULL AND status IN ('processed', 'stale', 'ignored');