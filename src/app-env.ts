/** The Hono environment of every route: the bindings and the request's parsed configuration. */
import type { Env, WebhookConfig } from "./env";

export interface AppEnv {
	Bindings: Env;
	Variables: { config: WebhookConfig };
}
