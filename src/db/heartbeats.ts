/** Every statement on `heartbeats`: when periodic work last ran, and what it did (the console shows it). */
import type { SqlRow } from "./rows";
import type { heartbeats } from "./schema";

export type HeartbeatRow = SqlRow<typeof heartbeats>;

/** Records a run of `name` (one row per name, the newest wins). */
export function beat(db: D1Database, name: string, at: number, detail: unknown): Promise<D1Result> {
	return db
		.prepare(
			`INSERT INTO heartbeats (name, at, detail) VALUES (?1, ?2, ?3)
       ON CONFLICT (name) DO UPDATE SET at = excluded.at, detail = excluded.detail WHERE excluded.at >= heartbeats.at`,
		)
		.bind(name, at, JSON.stringify(detail))
		.run();
}

export function lastBeat(db: D1Database, name: string): Promise<HeartbeatRow | null> {
	return db.prepare("SELECT name, at, detail FROM heartbeats WHERE name = ?1").bind(name).first<HeartbeatRow>();
}
