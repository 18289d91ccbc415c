/**
 * npm run public-key — prints the uncompressed secp256k1 public key (04..., 130 hex chars) of the
 * private key the sender's API requests are signed with (its `api.privateKeyVariable`, read from
 * the environment, else .dev.vars): the key to register with that sender.
 */
import { parsePrivateKey, publicKeyHex } from "../src/crypto/access-signature";
import { reconciledProvider } from "../src/providers";
import { devVars } from "./sim/dev-vars";
import { toolArgs } from "./sim/tool";

const sender = reconciledProvider();
const variable = sender?.api.privateKeyVariable;

toolArgs(
	"public-key",
	`Usage: npm run public-key

Prints the uncompressed secp256k1 public key of ${variable ?? "the API's private key"} (read from the
environment, else .dev.vars; never from flags), to register with ${sender?.label ?? "the sender"}. To make a new private key:
  node -e "console.log(require('node:crypto').randomBytes(32).toString('hex'))"`,
	{},
);

if (!sender || !variable) {
	console.error("public-key: no sender in src/providers/ signs its API requests with a private key");
	process.exit(2);
}
const hex = process.env[variable] ?? devVars()[variable] ?? "";
const key = parsePrivateKey(hex);
if (!key) {
	console.error(`public-key: set ${variable} (64 hex characters of a valid secp256k1 key)`);
	process.exit(2);
}
console.log(publicKeyHex(key));
