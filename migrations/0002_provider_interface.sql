ALTER TABLE `deliveries` ADD `attempt_ref` text;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `dedupe_key` text;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `headers` text;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `note` text;--> statement-breakpoint
CREATE UNIQUE INDEX `deliveries_provider_dedupe_key` ON `deliveries` (`provider`,`dedupe_key`);