/**
 * Every statement on `delivery_moves`, the archive's scratch table (src/sweep/archive.ts): empty
 * between batches. The rewrite is one D1 batch: copyToMoves, deleteMoved and
 * reinsertMovedWithoutBody (src/db/deliveries.ts), clearMoves.
 */
import { DELIVERY_COLUMNS } from "./deliveries";
import type { SqlRow } from "./rows";
import type { deliveryMoves } from "./schema";

export type DeliveryMoveRow = SqlRow<typeof deliveryMoves>;

const COLUMNS = DELIVERY_COLUMNS.join(", ");

/**
 * Copies aside the listed rows (`movedJson`: `{id, at}`, `at` the status_at they were read with)
 * that are unchanged since, still settled, with their body still in D1.
 */
export function copyToMoves(db: D1Database, movedJson: string): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO delivery_moves (${COLUMNS})
         SELECT ${DELIVERY_COLUMNS.map((c) => `d.${c}`).join(", ")} FROM deliveries AS d
         JOIN (SELECT value->>'id' AS id, value->>'at' AS at FROM json_each(?1)) AS j ON d.id = j.id AND d.status_at = j.at
         WHERE d.raw_body IS NOT NULL AND d.status IN ('processed', 'stale', 'ignored')`,
		)
		.bind(movedJson);
}

/** Empties the scratch table, last in the rewrite's batch. */
export function clearMoves(db: D1Database): D1PreparedStatement {
	return db.prepare("DELETE FROM delivery_moves");
}
