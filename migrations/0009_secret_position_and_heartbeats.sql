CREATE TABLE `heartbeats` (
	`name` text PRIMARY KEY NOT NULL,
	`at` integer NOT NULL,
	`detail` text NOT NULL
);
--> statement-breakpoint
ALTER TABLE `deliveries` ADD `secret_position` integer;--> statement-breakpoint
CREATE INDEX `deliveries_older_secret` ON `deliveries` (`provider`,`secret_position`,`received_at`) WHERE secret_position > 0;--> statement-breakpoint
ALTER TABLE `delivery_moves` ADD `secret_position` integer;