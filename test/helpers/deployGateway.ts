// A raw gateway (label "shop") in front of the catalog fixture serving the console tests' deploy
// tool, under an approval mode, initialized and its tools listed: the setup of the tests of a call
// waiting for a human (call-waits, call-waits-locked, progress-after-cancel).
import { expect } from "vitest";
import { catalogFile, DEPLOY_TOOL } from "../console/helpers.js";
import { tempDir } from "./files.js";
import { FIXTURES, NODE } from "./paths.js";
import { type RawGateway, rawGateway } from "./raw.js";

/** `holdMs`: --approval-timeout; `extra`: more flags of `run`. Its teardown goes on `cleanup`. */
export async function deployGateway(
  mode: "session" | "per-call",
  holdMs: number,
  cleanup: (() => Promise<void> | void)[],
  extra: string[] = [],
): Promise<RawGateway> {
  const tools = catalogFile(tempDir("portcullis-deploy-gateway-"), [DEPLOY_TOOL]);
  const gw = rawGateway({
    args: [
      "--label",
      "shop",
      "--approval",
      mode,
      "--approval-timeout",
      String(holdMs),
      ...extra,
      "--",
      NODE,
      FIXTURES.catalog,
    ],
    env: { FIXTURE_CATALOG: tools },
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  expect((await gw.request("tools/list")).result).toBeDefined();
  return gw;
}
