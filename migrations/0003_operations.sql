CREATE TABLE `alert_state` (
	`name` text PRIMARY KEY NOT NULL,
	`firing` integer NOT NULL,
	`since` integer NOT NULL,
	`detail` text
);
--> statement-breakpoint
CREATE TABLE `rejection_counts` (
	`minute` integer NOT NULL,
	`provider` text NOT NULL,
	`reason` text NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`minute`, `provider`, `reason`)
);
--> statement-breakpoint
-- The rejection log becomes a ring (see src/db/schema.ts). Its old rows are metadata only and are
-- not carried over.
DROP TABLE `rejections`;--> statement-breakpoint
CREATE TABLE `rejections` (
	`id` integer PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL,
	`provider` text NOT NULL,
	`reason` text NOT NULL,
	`status` integer NOT NULL,
	`size` integer NOT NULL,
	`ip` text,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `rejections_seq` ON `rejections` (`seq`);--> statement-breakpoint
CREATE INDEX `rejections_at` ON `rejections` (`at`);--> statement-breakpoint
ALTER TABLE `deliveries` ADD `ack_ms` integer;