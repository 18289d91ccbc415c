/** Every statement on `alert_state`: one row per alert rule (src/sweep/alerts.ts). */
import type { SqlRow } from "./rows";
import type { alertState } from "./schema";

export type AlertStateRow = SqlRow<typeof alertState>;

/** Every rule's recorded state. */
export async function readAlertStates(db: D1Database): Promise<Pick<AlertStateRow, "name" | "firing" | "detail">[]> {
	const { results } = await db
		.prepare("SELECT name, firing, detail FROM alert_state")
		.all<Pick<AlertStateRow, "name" | "firing" | "detail">>();
	return results;
}

/** Records one rule's new state (the sweep batches one per transition). */
export function setAlertState(
	db: D1Database,
	name: string,
	firing: 0 | 1,
	since: number,
	detail: string,
): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO alert_state (name, firing, since, detail) VALUES (?1, ?2, ?3, ?4)
           ON CONFLICT (name) DO UPDATE SET firing = excluded.firing, since = excluded.since, detail = excluded.detail`,
		)
		.bind(name, firing, since, detail);
}

/** The states the console shows, firing first (run alone or in a batch: `.all<AlertStateRow>()`). */
export function listAlertStates(db: D1Database): D1PreparedStatement {
	return db.prepare("SELECT name, firing, since, detail FROM alert_state ORDER BY firing DESC, since DESC LIMIT 100");
}
