/** The conformance suite (test/support/conformance.ts), run for every provider of the registry. */
import { beforeEach, describe } from "vitest";
import { conformanceSuite } from "../support/conformance";
import { SENDERS } from "../support/senders";
import { resetDb } from "../support/worker";

beforeEach(resetDb);

describe.each(SENDERS)("$name conformance", (sender) => conformanceSuite(sender));
