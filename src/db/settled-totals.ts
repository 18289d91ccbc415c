/** Every statement on `settled_totals`: written only by the `settled` effect (src/effects/handlers.ts). */
import type { SqlRow } from "./rows";
import type { settledTotals } from "./schema";

export type SettledTotalRow = SqlRow<typeof settledTotals>;

/** One settled order counted: batched with the effect's "mark done" (src/effects/executor.ts). */
export function addSettled(db: D1Database, currency: string, amount: number): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO settled_totals (currency, count, amount) VALUES (?1, 1, ?2)
             ON CONFLICT (currency) DO UPDATE SET count = count + 1, amount = amount + excluded.amount`,
		)
		.bind(currency, amount);
}

/** Every currency's totals (GET /admin/metrics batches it). */
export function listSettledTotals(db: D1Database): D1PreparedStatement {
	return db.prepare("SELECT currency, count, amount FROM settled_totals ORDER BY currency");
}
