// A one-call approval signs the digest of the call's arguments, and the review shows those
// arguments. The client writes the rest of the call's params too: members no revision of MCP
// defines for a tools/call (`input`, `args`, `Arguments`, `parameters`) went to the server as
// written, never shown, digested or recorded. A lenient server that reads one of them (a
// hand-written one taking `params.input ?? params.arguments`) would run what the human never saw
// under the human's approval of `{"to": "alice"}`. Only the name, the approved arguments and the
// members the protocol gives a call (`_meta`, and a 2026-07-28 retry's `inputResponses` and
// `requestState`) may reach the server. Real gateway, the rawlines fixture (which logs every line
// it receives, byte for byte), the decision by the real CLI.

import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { rawlinesGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const PAY = {
  name: "pay",
  description: "Pays someone",
  inputSchema: { type: "object", properties: { to: { type: "string" } }, required: ["to"] },
};

describe("a tools/call's params beyond its arguments", () => {
  it("members a call does not have never reach the server; _meta and a retry's answers do", async () => {
    const { peer: gw, received } = await rawlinesGateway(["--approval-timeout", "120000"], {
      label: "pay",
      approval: "per-call",
      tools: [PAY],
    });
    cleanup.push(() => gw.close());
    const calls = (): string[] => received().filter((l) => l.includes('"tools/call"'));

    gw.send({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      // beside params too: a server that reads a call's arguments from the message itself
      arguments: { to: "mallory" },
      Params: { name: "pay", arguments: { to: "mallory" } },
      params: {
        name: "pay",
        arguments: { to: "alice" },
        input: { to: "mallory" },
        args: { to: "mallory" },
        Arguments: { to: "mallory" },
        parameters: { to: "mallory" },
        _meta: { progressToken: "p-7" },
        inputResponses: { theirs: { action: "accept" } },
        requestState: "server-state-1",
      },
    });
    const seen = new Set<string>();
    const req = await nextStoredRequest(gw.stateDir, seen);
    // what the human reads: the arguments, and nothing of mallory
    const shown = (await pending(gw.stateDir)).find((p) => p.request === req.request) as unknown as {
      review: { arguments: { name: string; value: unknown }[] };
    };
    expect(shown.review.arguments).toEqual([{ name: "to", value: "alice" }]);
    expect(JSON.stringify(shown)).not.toContain("mallory");
    await decideByCli(gw.stateDir, "approve", req.request, "--for", "call");
    const answer = await gw.next((m: WireMessage) => m.id === 7 && m.method === undefined, 30_000);
    expect(answer.error).toBeUndefined();
    await waitFor(() => calls().length >= 1, 10_000, "the approved call at the server");

    const got = calls();
    expect(got).toHaveLength(1);
    // the server read nothing the human did not approve, whatever member it might take arguments from
    expect(got[0]).not.toContain("mallory");
    const message = JSON.parse(got[0]!) as { params: Record<string, unknown> };
    expect(Object.keys(message).sort()).toEqual(["id", "jsonrpc", "method", "params"]);
    const params = message.params;
    expect(Object.keys(params).sort()).toEqual([
      "_meta",
      "arguments",
      "inputResponses",
      "name",
      "requestState",
    ]);
    expect(params.arguments).toEqual({ to: "alice" });
    expect(params._meta).toEqual({ progressToken: "p-7" });
    expect(params.inputResponses).toEqual({ theirs: { action: "accept" } });
    expect(params.requestState).toBe("server-state-1");
    // and the gateway says what it left out, by name
    await waitFor(() => /left out 6 members/.test(gw.stderr()), 10_000, "the gateway's line");
    expect(gw.stderr()).toContain(`"arguments", "Params", "input", "args", "Arguments", …`);
  }, 60_000);
});
