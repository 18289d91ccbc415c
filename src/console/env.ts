/** The console's Hono environment: the app's, plus what its middleware sets for the pages. */
import type { Context } from "hono";
import type { AppEnv } from "../app-env";
import type { Session } from "./session";

export interface ConsoleEnv {
	Bindings: AppEnv["Bindings"];
	Variables: AppEnv["Variables"] & { adminToken: string; nonce: string; session: Session; csrf: string };
}
export type ConsoleContext = Context<ConsoleEnv>;
