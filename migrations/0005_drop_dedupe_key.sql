DROP INDEX `deliveries_provider_dedupe_key`;--> statement-breakpoint
ALTER TABLE `deliveries` DROP COLUMN `dedupe_key`;