/**
 * npm run public-key — prints the uncompressed secp256k1 public key (04..., 130 hex chars) of
 * BLOOBANK_PRIVATE_KEY (from the environment, else .dev.vars): the key to register with BlooBank.
 */
import { parsePrivateKey, publicKeyHex } from "../src/crypto/access-signature";
import { devVars } from "./sim/dev-vars";
import { toolArgs } from "./sim/tool";

toolArgs(
	"public-key",
	`Usage: npm run public-key

Prints the uncompressed secp256k1 public key of BLOOBANK_PRIVATE_KEY (read from the environment,
else .dev.vars; never from flags), to register with BlooBank. To make a new private key:
  node -e "console.log(require('node:crypto').randomBytes(32).toString('hex'))"`,
	{},
);

const hex = process.env.BLOOBANK_PRIVATE_KEY ?? devVars().BLOOBANK_PRIVATE_KEY ?? "";
const key = parsePrivateKey(hex);
if (!key) {
	console.error("public-key: set BLOOBANK_PRIVATE_KEY (64 hex characters of a valid secp256k1 key)");
	process.exit(2);
}
console.log(publicKeyHex(key));
