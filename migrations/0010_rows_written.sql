PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_deliveries` (
	`id` integer PRIMARY KEY NOT NULL,
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
	`archived_at` integer,
	`secret_position` integer
);
--> statement-breakpoint
INSERT INTO `__new_deliveries`("id", "provider", "message_id", "event", "status", "raw_body", "body_bytes", "provider_attempt", "attempt_ref", "headers", "note", "resource_type", "resource_wallet", "resource_id", "resource_version", "received_at", "status_at", "send_token", "send_token_at", "attempts", "duplicates", "last_duplicate_at", "last_error", "processed_at", "ack_ms", "event_at", "archived_at", "secret_position") SELECT "id", "provider", "message_id", "event", "status", "raw_body", "body_bytes", "provider_attempt", "attempt_ref", "headers", "note", "resource_type", "resource_wallet", "resource_id", "resource_version", "received_at", "status_at", "send_token", "send_token_at", "attempts", "duplicates", "last_duplicate_at", "last_error", "processed_at", "ack_ms", "event_at", "archived_at", "secret_position" FROM `deliveries`;--> statement-breakpoint
DROP TABLE `deliveries`;--> statement-breakpoint
ALTER TABLE `__new_deliveries` RENAME TO `deliveries`;--> statement-breakpoint
-- deliveries_open holds exactly the rows not applied: processed_at is set on every settled row
-- (ignored at ingress included) and NULL on every row received, enqueued or failed.
UPDATE `deliveries` SET `processed_at` = `status_at` WHERE `processed_at` IS NULL AND `status` IN ('processed', 'stale', 'ignored');--> statement-breakpoint
UPDATE `deliveries` SET `processed_at` = NULL WHERE `processed_at` IS NOT NULL AND `status` IN ('received', 'enqueued', 'failed');--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `deliveries_provider_message_id` ON `deliveries` (`provider`,`message_id`);--> statement-breakpoint
CREATE INDEX `deliveries_open` ON `deliveries` (`received_at`) WHERE processed_at IS NULL;--> statement-breakpoint
CREATE INDEX `deliveries_received_at` ON `deliveries` (`received_at`);--> statement-breakpoint
CREATE INDEX `deliveries_resource` ON `deliveries` (`provider`,`resource_type`,`resource_wallet`,`resource_id`);--> statement-breakpoint
CREATE INDEX `deliveries_to_archive` ON `deliveries` (`status_at`) WHERE raw_body IS NOT NULL AND status IN ('processed', 'stale', 'ignored');--> statement-breakpoint
CREATE INDEX `deliveries_older_secret` ON `deliveries` (`provider`,`secret_position`,`received_at`) WHERE secret_position > 0;--> statement-breakpoint
DROP INDEX `effects_status_claimed`;--> statement-breakpoint
CREATE INDEX `effects_open` ON `effects` (`status`) WHERE status = 'pending' OR status = 'failed';--> statement-breakpoint
DROP INDEX `resources_updated_at`;--> statement-breakpoint
CREATE TABLE `__new_delivery_moves` (
	`id` integer PRIMARY KEY NOT NULL,
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
	`archived_at` integer,
	`secret_position` integer
);
--> statement-breakpoint
INSERT INTO `__new_delivery_moves`("id", "provider", "message_id", "event", "status", "raw_body", "body_bytes", "provider_attempt", "attempt_ref", "headers", "note", "resource_type", "resource_wallet", "resource_id", "resource_version", "received_at", "status_at", "send_token", "send_token_at", "attempts", "duplicates", "last_duplicate_at", "last_error", "processed_at", "ack_ms", "event_at", "archived_at", "secret_position") SELECT "id", "provider", "message_id", "event", "status", "raw_body", "body_bytes", "provider_attempt", "attempt_ref", "headers", "note", "resource_type", "resource_wallet", "resource_id", "resource_version", "received_at", "status_at", "send_token", "send_token_at", "attempts", "duplicates", "last_duplicate_at", "last_error", "processed_at", "ack_ms", "event_at", "archived_at", "secret_position" FROM `delivery_moves`;--> statement-breakpoint
DROP TABLE `delivery_moves`;--> statement-breakpoint
ALTER TABLE `__new_delivery_moves` RENAME TO `delivery_moves`;