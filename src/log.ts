/**
 * Structured JSON log lines. Callers pass named fields, never headers or bodies: the only way a
 * secret or a signature could reach a log is by being passed here, and nothing passes them.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";

export function log(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
	const line = JSON.stringify({ level, msg, ...fields, at: new Date().toISOString() });
	if (level === "error") console.error(line);
	else if (level === "warn") console.warn(line);
	else console.log(line);
}

export function errorMessage(err: unknown): string {
	return (err instanceof Error ? err.message : String(err)).slice(0, 500);
}
