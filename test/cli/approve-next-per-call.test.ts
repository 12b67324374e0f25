// `approve --next --for session` on a request of a per-call tool (one that can only be approved
// for one call): `approve ID --for session` refuses it before the review is printed, while
// `--next` printed the whole review on stdout and then refused, exit 2. Now both refuse in the
// same sentence, nothing on stdout, the request left pending. The real CLI, no terminal.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { runCli } from "../helpers/gateway.js";
import { perCallToolGateway, requestState } from "../helpers/perCallTool.js";
import { passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const approve = (stateDir: string, ...args: string[]) =>
  runCli(["approve", ...args, "--for", "session", "--state-dir", stateDir], {
    env: passphraseEnv(),
    noTerminal: true,
  });

describe("approve --for session of a per-call tool's request", () => {
  it("--next refuses as 'approve ID' does: before the review, nothing on stdout, still pending", async () => {
    const { stateDir, gw } = await perCallToolGateway(
      { name: "deploy", inputSchema: { type: "object", properties: { note: { type: "string" } } } },
      cleanup,
    );
    const call = (gw.client as Client).callTool({ name: "deploy", arguments: { note: "a" } }, undefined, {
      timeout: 90_000,
    });
    call.catch(() => {});
    const req = await nextStoredRequest(stateDir);
    const refusal =
      "tool deploy of shell needs a human decision for every call: it can be approved for this one call only (--for call); nothing was approved.\n";

    const byId = await approve(stateDir, req.request);
    expect(byId.stdout).toBe("");
    expect(byId.stderr).toBe(`portcullis approve: ${refusal}`);
    expect(byId.code).toBe(2);

    const next = await approve(stateDir, "--next");
    expect(next.stdout).toBe("");
    expect(next.stderr).toBe(`portcullis approve --next: ${refusal}`);
    expect(next.code).toBe(2);
    expect(await requestState(stateDir, req.request)).toBe("pending");
  });
});
