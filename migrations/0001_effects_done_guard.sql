-- An effect is marked done in the same D1 batch (one transaction) as its local writes
-- (src/effects/executor.ts). If two executors race on one effect, the second one's
-- `status = 'done'` update hits this trigger, the whole batch rolls back, and the local writes
-- (e.g. the settled-totals increment) are not applied twice.
CREATE TRIGGER `effects_done_once` BEFORE UPDATE OF `status` ON `effects`
WHEN OLD.`status` = 'done' AND NEW.`status` = 'done'
BEGIN
	SELECT RAISE(ABORT, 'effect already done');
END;
