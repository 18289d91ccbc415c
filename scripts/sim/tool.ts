/**
 * The flags of the command-line tools (Node only; ./cli.ts stays runnable in workerd, where its
 * tests run).
 */
import { parseArgs } from "node:util";
import { secretFlagError } from "./cli";

type ParseArgsOptions = NonNullable<Parameters<typeof parseArgs>[0]>["options"];

export type ToolArgs<O extends ParseArgsOptions> =
	| { ok: true; values: Record<keyof O, string | boolean | undefined> }
	| { ok: false; exitCode: 0 | 2; output: string };

/**
 * The flags of a tool: `--help` prints the usage (exit 0); a secret flag or an unknown flag is an
 * error followed by the usage (exit 2).
 */
export function parseToolArgs<O extends ParseArgsOptions>(
	tool: string,
	usage: string,
	options: O,
	argv: readonly string[],
): ToolArgs<O> {
	const secret = secretFlagError(argv);
	if (secret) return { ok: false, exitCode: 2, output: `${tool}: ${secret}\n\n${usage}` };
	let values: Record<string, string | boolean | undefined>;
	try {
		({ values } = parseArgs({
			args: [...argv],
			options: { ...options, help: { type: "boolean", short: "h" } },
			allowPositionals: false,
		}) as { values: Record<string, string | boolean | undefined> });
	} catch (err) {
		return { ok: false, exitCode: 2, output: `${tool}: ${(err as Error).message}\n\n${usage}` };
	}
	if (values.help) return { ok: false, exitCode: 0, output: usage };
	return { ok: true, values: values as Record<keyof O, string | boolean | undefined> };
}

/** Prints and exits unless the flags parse. */
export function toolArgs<O extends ParseArgsOptions>(
	tool: string,
	usage: string,
	options: O,
	argv: readonly string[] = process.argv.slice(2),
): Record<keyof O, string | boolean | undefined> {
	const parsed = parseToolArgs(tool, usage, options, argv);
	if (parsed.ok) return parsed.values;
	if (parsed.exitCode === 0) console.log(parsed.output);
	else console.error(parsed.output);
	process.exit(parsed.exitCode);
}
