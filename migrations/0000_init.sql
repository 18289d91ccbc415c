CREATE TABLE `deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`provider` text NOT NULL,
	`message_id` text NOT NULL,
	`event` text NOT NULL,
	`status` text NOT NULL,
	`raw_body` text,
	`body_bytes` integer NOT NULL,
	`provider_attempt` integer,
	`resource_type` text,
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
	`processed_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `deliveries_provider_message_id` ON `deliveries` (`provider`,`message_id`);--> statement-breakpoint
CREATE INDEX `deliveries_status_status_at` ON `deliveries` (`status`,`status_at`);--> statement-breakpoint
CREATE INDEX `deliveries_received_at` ON `deliveries` (`received_at`);--> statement-breakpoint
CREATE INDEX `deliveries_resource` ON `deliveries` (`provider`,`resource_type`,`resource_id`);--> statement-breakpoint
CREATE TABLE `effects` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`provider` text NOT NULL,
	`resource_type` text NOT NULL,
	`resource_id` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`payload` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`created_at` integer NOT NULL,
	`claimed_until` integer DEFAULT 0 NOT NULL,
	`done_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `effects_resource_kind` ON `effects` (`provider`,`resource_type`,`resource_id`,`kind`);--> statement-breakpoint
CREATE INDEX `effects_status_claimed` ON `effects` (`status`,`claimed_until`);--> statement-breakpoint
CREATE TABLE `rejections` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`provider` text NOT NULL,
	`reason` text NOT NULL,
	`status` integer NOT NULL,
	`size` integer NOT NULL,
	`ip` text,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `rejections_at` ON `rejections` (`at`);--> statement-breakpoint
CREATE INDEX `rejections_reason` ON `rejections` (`reason`);--> statement-breakpoint
CREATE TABLE `resources` (
	`provider` text NOT NULL,
	`type` text NOT NULL,
	`id` text NOT NULL,
	`wallet` text,
	`version` integer NOT NULL,
	`status` text NOT NULL,
	`data` text NOT NULL,
	`updated_at` integer NOT NULL,
	`source` text NOT NULL,
	PRIMARY KEY(`provider`, `type`, `id`)
);
--> statement-breakpoint
CREATE INDEX `resources_updated_at` ON `resources` (`updated_at`);--> statement-breakpoint
CREATE TABLE `settled_totals` (
	`currency` text PRIMARY KEY NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	`amount` integer DEFAULT 0 NOT NULL
);
