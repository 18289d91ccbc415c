/** Reads .dev.vars with Node's own dotenv parser, so the CLIs work against `npm run dev` without flags. */
import { readFileSync } from "node:fs";
import { parseEnv } from "node:util";

export function devVars(path = ".dev.vars"): Record<string, string> {
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch {
		return {};
	}
	const vars: Record<string, string> = {};
	for (const [name, value] of Object.entries(parseEnv(text))) if (value !== undefined) vars[name] = value;
	return vars;
}
