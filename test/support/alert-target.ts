/**
 * A fake alert target behind ALERT_WEBHOOK_URL, answering as the chat tools do: Slack incoming
 * webhooks answer 400 `no_text` without a `text`, Discord webhooks answer 400 (code 50006)
 * without a `content`. Installed over the global fetch, as the other alert tests do; any other
 * URL is a test error.
 */
import { vi } from "vitest";

export const ALERT_URL = "https://hooks.chat.test/services/T000/B000/alert-url-secret-token";

export interface AlertTarget {
	/** Every JSON payload that reached the target, accepted or not. */
	payloads: Record<string, unknown>[];
	/** Set to answer every post with this status and body (e.g. a revoked webhook), null to behave. */
	answer: { status: number; body: string } | null;
	restore(): void;
}

export function fakeAlertTarget(): AlertTarget {
	const target: AlertTarget = {
		payloads: [],
		answer: null,
		restore: () => spy.mockRestore(),
	};
	const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
		const req = new Request(input, init);
		if (req.url !== ALERT_URL) throw new Error(`unexpected fetch ${req.url}`);
		const payload = (await req.json()) as Record<string, unknown>;
		target.payloads.push(payload);
		if (target.answer) return new Response(target.answer.body, { status: target.answer.status });
		if (typeof payload.text !== "string" || payload.text === "") return new Response("no_text", { status: 400 });
		if (typeof payload.content !== "string" || payload.content === "") {
			return Response.json({ message: "Cannot send an empty message", code: 50006 }, { status: 400 });
		}
		return new Response(null, { status: 204 });
	});
	return target;
}

/** Captures the Worker's structured log lines (console.*), parsed. */
export function captureLogs(): { lines: Record<string, unknown>[]; raw: string[]; restore(): void } {
	const raw: string[] = [];
	const capture = (...args: unknown[]) => raw.push(args.map(String).join(" "));
	const spies = [
		vi.spyOn(console, "log").mockImplementation(capture),
		vi.spyOn(console, "warn").mockImplementation(capture),
		vi.spyOn(console, "error").mockImplementation(capture),
	];
	return {
		raw,
		get lines() {
			return raw.flatMap((l) => {
				try {
					return [JSON.parse(l) as Record<string, unknown>];
				} catch {
					return [];
				}
			});
		},
		restore: () => {
			for (const s of spies) s.mockRestore();
		},
	};
}
