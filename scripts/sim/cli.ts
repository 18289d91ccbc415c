/**
 * What the command-line tools share about secrets and targets. Secrets (webhook secrets, the
 * admin token, the path token) come from the environment or .dev.vars, never from flags: a flag
 * lands in shell history and in every process listing. A target on plain http must be loopback:
 * these tools send signed deliveries and the admin token, which a network path could read.
 */
import { encodingVariable, registered, type SimProvider, simProviders } from "./signing";

/** Flags the tools used to take and now refuse, with the variable to set instead. */
export const SECRET_FLAGS: Record<string, string> = {
	"--secret": "<PROVIDER>_WEBHOOK_SECRETS",
	"--admin-token": "ADMIN_TOKEN",
	"--path-token": "WEBHOOK_PATH_TOKEN",
};

/** An error message when argv carries a secret as a flag, else null. */
export function secretFlagError(argv: readonly string[]): string | null {
	for (const arg of argv) {
		const flag = arg.split("=")[0] ?? "";
		const variable = SECRET_FLAGS[flag];
		if (variable)
			return `${flag} is not accepted: secrets are read from the environment or .dev.vars (set ${variable}), never from flags`;
	}
	return null;
}

/** The environment first, then .dev.vars; empty values count as unset. */
export function secretFrom(
	name: string,
	env: Readonly<Record<string, string | undefined>>,
	devVars: Readonly<Record<string, string>>,
): string | null {
	const value = env[name]?.trim() || devVars[name]?.trim();
	return value ? value : null;
}

export function isLoopback(hostname: string): boolean {
	const h = hostname.replace(/^\[|\]$/g, "").toLowerCase();
	return h === "localhost" || h.endsWith(".localhost") || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h);
}

/** The target without a trailing slash, or why it is refused. */
export function checkTarget(url: string): { ok: true; url: string; loopback: boolean } | { ok: false; error: string } {
	let parsed: URL;
	try {
		parsed = new URL(url);
	} catch {
		return { ok: false, error: `--url ${url} is not a URL` };
	}
	if (parsed.protocol === "http:" && !isLoopback(parsed.hostname))
		return { ok: false, error: `--url must be https for a non-loopback host (got http://${parsed.host})` };
	if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
		return { ok: false, error: `--url must be http(s) (got ${parsed.protocol})` };
	return { ok: true, url: url.replace(/\/+$/, ""), loopback: isLoopback(parsed.hostname) };
}

/**
 * Asks the receiver's /healthz before sending anything: null when it answers 200, else what to
 * tell the user (unreachable, unhealthy and why, or not this receiver).
 */
export async function receiverProblem(url: string, fetchImpl: typeof fetch = fetch): Promise<string | null> {
	let res: Response;
	try {
		res = await fetchImpl(`${url}/healthz`, { signal: AbortSignal.timeout(5_000) });
	} catch (err) {
		const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
		return `cannot reach ${url} (${cause}): is \`npm run dev\` running? Or pass --url`;
	}
	if (res.ok) return null;
	const body = (await res.json().catch(() => null)) as { error?: unknown } | null;
	if (res.status === 503 && typeof body?.error === "string") {
		const why =
			body.error === "migrations"
				? "the D1 migrations are not applied (`npm run dev` applies them; deployed: `npx wrangler d1 migrations apply DB --remote`)"
				: body.error === "d1"
					? "D1 does not answer"
					: `configuration error in ${body.error}`;
		return `the receiver at ${url} is not healthy: ${why}`;
	}
	return `${url}/healthz answered ${res.status}: is this the webhook receiver?`;
}

/**
 * A provider's key encoding as the receiver reads it from `variable` (utf8 unless base64), or null
 * when the value is neither. A provider without such a variable signs with utf8.
 */
export function keyEncoding(
	variable: string | null,
	env: Readonly<Record<string, string | undefined>>,
	devVars: Readonly<Record<string, string>>,
): "utf8" | "base64" | null {
	const value = ((variable && (env[variable]?.trim() || devVars[variable]?.trim())) || "utf8").toLowerCase();
	return value === "utf8" || value === "base64" ? value : null;
}

/** What a tool needs to sign as one registered provider, read from the environment or .dev.vars. */
export interface ToolSender {
	provider: SimProvider;
	/** The first entry of its secrets variable: the one it signs with. */
	secret: string;
	keyEncoding: "utf8" | "base64";
}

/** The provider named by --provider, its secret and key encoding; or why a tool cannot sign as it. */
export function toolSender(
	name: string,
	env: Readonly<Record<string, string | undefined>>,
	devVars: Readonly<Record<string, string>>,
): { ok: true; sender: ToolSender } | { ok: false; error: string } {
	const names = simProviders();
	const provider = names.find((p) => p === name);
	if (!provider) return { ok: false, error: `--provider must be one of ${names.join(", ")}` };
	const variable: string = registered(provider).secretsVariable;
	const secret = secretFrom(variable, env, devVars)?.split(",")[0]?.trim();
	if (!secret) return { ok: false, error: `no secret: set ${variable} in the environment or .dev.vars` };
	const encodingName = encodingVariable(provider);
	const encoding = keyEncoding(encodingName, env, devVars);
	if (!encoding) return { ok: false, error: `${encodingName} must be utf8 or base64 (as the receiver's)` };
	return { ok: true, sender: { provider, secret, keyEncoding: encoding } };
}

/** The registered senders' key encoding variables, for the tools' usage texts. */
export function encodingVariables(): string[] {
	return simProviders().flatMap((p) => encodingVariable(p) ?? []);
}
