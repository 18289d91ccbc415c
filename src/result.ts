/**
 * The one shape of an expected outcome (expected failures are values, not exceptions): `ok` says
 * which side, and each side carries its own named fields. Callers branch on `ok`, then read them.
 */
export type Result<Ok extends object, Err extends object> = ({ ok: true } & Ok) | ({ ok: false } & Err);

/** A success that carries nothing. */
export type Done = Record<never, never>;
