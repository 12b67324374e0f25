// A request nobody can decide any more, made for real: a gateway in front of the raw-lines fixture
// asks for approval of a call, then is SIGKILLed while the request is pending (so it never closes
// it itself). The listers close such a request; the tests of what they say when they cannot use it.
import { join } from "node:path";
import { expect } from "vitest";
import { storedPending } from "./approvals.js";
import { tempDir, waitFor } from "./files.js";
import { FIXTURES, NODE } from "./paths.js";
import { rawGateway } from "./raw.js";

const TOOLS = '[{"name":"say","inputSchema":{"type":"object"}}]';

/** A gateway that asked for approval of a call, SIGKILLed while the request was pending: its id. */
export async function abandonedRequest(
  stateDir: string,
  cleanup: (() => Promise<void> | void)[],
): Promise<string> {
  const gw = rawGateway({
    args: ["--label", "held", "--approval", "per-call", "--", NODE, FIXTURES.rawlines],
    env: { FIXTURE_RAW_LOG: join(tempDir(), "raw.log"), FIXTURE_RAW_TOOLS: TOOLS },
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  expect((await gw.request("tools/list")).result).toMatchObject({ tools: [{ name: "say" }] });
  gw.send({ jsonrpc: "2.0", id: "held", method: "tools/call", params: { name: "say", arguments: {} } });
  const [request] = await waitFor(() => {
    const p = storedPending(stateDir);
    return p.length > 0 && p;
  });
  gw.kill("SIGKILL");
  await gw.exited;
  return request!.request;
}
