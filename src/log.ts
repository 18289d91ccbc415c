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

/**
 * An error's message for a log line, without any URL in it: an outbound URL can carry a
 * credential (a chat webhook URL is one; a path may hold WEBHOOK_PATH_TOKEN).
 */
export function errorMessage(err: unknown): string {
	return withoutUrls(err instanceof Error ? err.message : String(err)).slice(0, 500);
}

export function withoutUrls(text: string): string {
	return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]*/gi, "<url>");
}
