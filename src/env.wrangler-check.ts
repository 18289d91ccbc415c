/**
 * Compiled only by tsconfig.wrangler.json (`npm run typecheck`), next to worker-configuration.d.ts,
 * which `npm run types` generates from wrangler.toml: there `Cloudflare.Env` is exactly what
 * wrangler.toml declares. `Env` (src/env.ts) stays the code's own view: it also lists the secrets
 * and optional bindings wrangler.toml does not name. Each line fails to compile when the two drift.
 */
import type { Env } from "./bindings";
import type { providers } from "./providers";

/**
 * The senders' variables are declared in their provider files (src/providers/model.ts): `Env` has
 * them only when those files are compiled, which this import guarantees.
 */
export type Registered = typeof providers;

type Declared = Cloudflare.Env;
type RequiredKeys<T> = { [K in keyof T]-?: Record<never, never> extends Pick<T, K> ? never : K }[keyof T];
type Holds<T extends true> = T;

/** A binding or [vars] key in wrangler.toml that Env does not know: the code never reads it. */
export type UnknownToCode = Exclude<keyof Declared, keyof Env>;
/** A binding Env requires that wrangler.toml does not declare: undefined at run time. */
export type Undeclared = Exclude<RequiredKeys<Env>, keyof Declared>;
/** A declared binding whose type is not the one Env expects (a queue bound as a D1 database). */
export type Mistyped = {
	[K in keyof Declared & keyof Env]: Declared[K] extends NonNullable<Env[K]> ? never : K;
}[keyof Declared & keyof Env];

export type Checks = [
	Holds<[UnknownToCode] extends [never] ? true : false>,
	Holds<[Undeclared] extends [never] ? true : false>,
	Holds<[Mistyped] extends [never] ? true : false>,
];
