/** The registry: adding a provider is writing its file and listing it here. */
import type { ProviderName } from "../env";
import { bloobank } from "./bloobank";
import type { Provider } from "./types";

const providers: Partial<Record<ProviderName, Provider>> = {
	bloobank,
};

export function getProvider(name: string): Provider | null {
	return Object.hasOwn(providers, name) ? (providers[name as ProviderName] ?? null) : null;
}
