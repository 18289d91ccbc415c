/** Reads .dev.vars (KEY="value" lines) so the CLIs work against `npm run dev` without flags. */
import { readFileSync } from "node:fs";

export function devVars(path = ".dev.vars"): Record<string, string> {
	try {
		const vars: Record<string, string> = {};
		for (const line of readFileSync(path, "utf8").split("\n")) {
			const m = line.match(/^\s*([A-Z0-9_]+)\s*=\s*"?([^"]*)"?\s*$/);
			if (m) vars[m[1] as string] = m[2] as string;
		}
		return vars;
	} catch {
		return {};
	}
}
