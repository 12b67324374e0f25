// A 2026-07-28 client's call waiting for a human is answered at once with input_required, naming
// its request's console page: the client gave up on nothing, and retries once the human decided.
// A second call of the same tool with other arguments (agents call in parallel) must not close the
// first request as "superseded: its call was cancelled by the client" (HumanAsker.supersede is for
// session requests whose calls the client itself cancelled): the human would find the page the
// client was sent to closed, and the audit would say the client cancelled a call it never did.
// Nor must `approvals` say the client cancelled it: no call waits on it, sent to the console.

import { rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { consoleAddressPath, writeConsoleAddress } from "../../src/console/address.js";
import { auditEvents, storedPending } from "../helpers/approvals.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const META = modernMeta({ elicitation: { url: {} } }, { name: "by-hand", version: "1" });

function requestOf(answer: { result?: unknown }): string {
  const state = (answer.result as { requestState?: unknown } | undefined)?.requestState;
  expect(typeof state).toBe("string");
  return String(state).replace(/^portcullis-approval:/, "");
}

describe("a modern call sent to the console is not superseded", () => {
  it("two calls of one tool with other arguments, each answered input_required: both requests stay pending", async () => {
    const stateDir = newStateDir();
    writeConsoleAddress(stateDir, "http://127.0.0.1:45998");
    cleanup.push(() => rmSync(consoleAddressPath(stateDir), { force: true }));
    const tools = JSON.stringify([
      { name: "deploy", inputSchema: { type: "object", properties: { target: { type: "string" } } } },
    ]);
    const gw = rawGateway({
      args: ["--label", "modern-supersede", "--approval", "session", "--", ...fixtureCommand("rawlines")],
      env: { FIXTURE_RAW_TOOLS: tools },
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.request("tools/list", { _meta: META }, 20_000);

    const first = await gw.request(
      "tools/call",
      { name: "deploy", arguments: { target: "a" }, _meta: META },
      20_000,
    );
    expect((first.result as { resultType?: unknown }).resultType).toBe("input_required");
    const a = requestOf(first);

    const second = await gw.request(
      "tools/call",
      { name: "deploy", arguments: { target: "b" }, _meta: META },
      20_000,
    );
    expect((second.result as { resultType?: unknown }).resultType).toBe("input_required");
    const b = requestOf(second);
    expect(b).not.toBe(a);

    // the page the first call's client was sent to still shows a request a human can decide
    const listed = storedPending(stateDir) as unknown as {
      request: string;
      callWaiting: boolean | null;
      callLeft: { how: string } | null;
    }[];
    const pending = listed.map((r) => r.request);
    expect(pending).toContain(a);
    expect(pending).toContain(b);
    // no call waits on either now, and the listing says why: the client was sent to the console
    // (its row written before the call was answered), not that it cancelled anything
    for (const id of [a, b])
      expect(listed.find((r) => r.request === id)).toMatchObject({
        callWaiting: false,
        callLeft: { how: "sent-to-console" },
      });
    await gw.close();
    const superseded = (await auditEvents(stateDir)).filter(
      (e) => e.type === "approval_expired" && String(e.reason).startsWith("superseded"),
    );
    expect(superseded).toEqual([]);
  }, 120_000);
});
