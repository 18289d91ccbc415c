PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_effects` (
	`id` integer PRIMARY KEY NOT NULL,
	`provider` text NOT NULL,
	`resource_type` text NOT NULL,
	`resource_wallet` text DEFAULT '' NOT NULL,
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
INSERT INTO `__new_effects`("id", "provider", "resource_type", "resource_wallet", "resource_id", "kind", "status", "payload", "attempts", "last_error", "created_at", "claimed_until", "done_at") SELECT "id", "provider", "resource_type", "resource_wallet", "resource_id", "kind", "status", "payload", "attempts", "last_error", "created_at", "claimed_until", "done_at" FROM `effects`;--> statement-breakpoint
DROP TABLE `effects`;--> statement-breakpoint
ALTER TABLE `__new_effects` RENAME TO `effects`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `effects_resource_kind` ON `effects` (`provider`,`resource_type`,`resource_wallet`,`resource_id`,`kind`);--> statement-breakpoint
CREATE INDEX `effects_open` ON `effects` (`status`) WHERE status = 'pending' OR status = 'failed';--> statement-breakpoint
-- Dropping the old table dropped its trigger: the same guard as migrations/0001, on the new table.
CREATE TRIGGER `effects_done_once` BEFORE UPDATE OF `status` ON `effects`
WHEN OLD.`status` = 'done' AND NEW.`status` = 'done'
BEGIN
	SELECT RAISE(ABORT, 'effect already done');
END;
