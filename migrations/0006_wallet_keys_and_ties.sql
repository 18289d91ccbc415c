DROP INDEX `deliveries_resource`;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `resource_wallet` text;--> statement-breakpoint
-- Existing BlooBank rows take their wallet from the stored body (newer envelope: data, older: body).
UPDATE `deliveries` SET `resource_wallet` = CASE
	WHEN `provider` = 'bloobank' AND `raw_body` IS NOT NULL AND json_valid(`raw_body`)
	THEN coalesce(`raw_body`->>'$.data.wallet', `raw_body`->>'$.body.wallet', '') ELSE '' END
WHERE `resource_type` IS NOT NULL;--> statement-breakpoint
CREATE INDEX `deliveries_resource` ON `deliveries` (`provider`,`resource_type`,`resource_wallet`,`resource_id`);--> statement-breakpoint
DROP INDEX `effects_resource_kind`;--> statement-breakpoint
ALTER TABLE `effects` ADD `resource_wallet` text DEFAULT '' NOT NULL;--> statement-breakpoint
UPDATE `effects` SET `resource_wallet` = coalesce(`payload`->>'$.wallet', '')
WHERE `provider` = 'bloobank' AND json_valid(`payload`);--> statement-breakpoint
CREATE UNIQUE INDEX `effects_resource_kind` ON `effects` (`provider`,`resource_type`,`resource_wallet`,`resource_id`,`kind`);--> statement-breakpoint
CREATE TABLE `__new_resources` (
	`provider` text NOT NULL,
	`type` text NOT NULL,
	`id` text NOT NULL,
	`wallet` text DEFAULT '' NOT NULL,
	`version` integer NOT NULL,
	`status` text NOT NULL,
	`status_rank` integer DEFAULT 0 NOT NULL,
	`data` text NOT NULL,
	`updated_at` integer NOT NULL,
	`source` text NOT NULL,
	PRIMARY KEY(`provider`, `type`, `wallet`, `id`)
);
--> statement-breakpoint
-- The wallet comes from the stored data where the row has none; the rank is the providers' status
-- rank (docs/providers.md, status ranks) as src/providers computes it.
INSERT INTO `__new_resources`("provider", "type", "id", "wallet", "version", "status", "status_rank", "data", "updated_at", "source")
SELECT "provider", "type", "id",
	coalesce("wallet", CASE WHEN json_valid("data") THEN "data"->>'$.wallet' END, ''),
	"version", "status",
	CASE
		WHEN "status" IN ('REFUNDED', 'REVERSED', 'CHARGEBACK', 'CHARGED_BACK') THEN 2
		WHEN "status" IN ('SUCCESS', 'SUCCEEDED', 'PAID', 'CONFIRMED', 'COMPLETED', 'SETTLED', 'FAILED', 'DECLINED',
			'REJECTED', 'CANCELED', 'CANCELLED', 'EXPIRED') THEN 1
		ELSE 0 END,
	"data", "updated_at", "source"
FROM `resources`;--> statement-breakpoint
DROP TABLE `resources`;--> statement-breakpoint
ALTER TABLE `__new_resources` RENAME TO `resources`;--> statement-breakpoint
CREATE INDEX `resources_updated_at` ON `resources` (`updated_at`);