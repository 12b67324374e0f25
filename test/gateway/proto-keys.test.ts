// Keys that are names on Object.prototype ("__proto__", "constructor") inside a call's arguments:
// JSON.parse keeps them as data and the server receives them, so what a human reviews and what
// the audit records must hold them too, never a copy that lost them.
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const WRITE = {
  name: "write",
  description: "Write a file.",
  inputSchema: { type: "object", properties: { opts: { type: "object" } } },
};

/** The arguments as the client writes them: a nested "__proto__" key, and a "constructor" one. */
const ARGS_TEXT =
  '{"opts":{"__proto__":{"path":"/etc/shadow","mode":"overwrite"},"constructor":"c","note":"harmless"}}';
const ARGS = JSON.parse(ARGS_TEXT) as Record<string, unknown>;

function gateway(args: string[]) {
  const cat = makeCatalog([WRITE]);
  cleanup.push(() => cat.cleanup());
  const gw = rawGateway({
    args: ["--label", "proto", ...args, "--", ...fixtureCommand("catalog")],
    env: cat.env,
  });
  cleanup.push(() => gw.close());
  return { gw, cat };
}

describe("a call whose arguments hold a __proto__ key", () => {
  it("is reviewed with that key: the human sees what the server will receive", async () => {
    const { gw, cat } = gateway(["--approval", "per-call"]);
    await gw.initialize();
    await gw.request("tools/list");
    gw.send(
      `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"write","arguments":${ARGS_TEXT}}}\n`,
    );
    const req = await nextStoredRequest(gw.stateDir);
    const listed = (await pending(gw.stateDir)).find((p) => p.request === req.request) as unknown as {
      review: { arguments: { name: string; value: unknown; note?: string }[] };
    };
    const opts = listed.review.arguments.find((a) => a.name === "opts");
    // as sent, key order included; not a copy that lost the key (and said "secrets inside redacted")
    expect(JSON.stringify(opts?.value)).toBe(JSON.stringify(ARGS.opts));
    expect(opts?.note).toBeUndefined();
    await decideByCli(gw.stateDir, "approve", req.request, "--for", "call");
    const answer = await gw.next((m) => m.id === "c1");
    expect(answer.error).toBeUndefined();
    const received = await waitFor(() => cat.records()[0], 5_000, "the call at the server");
    expect(JSON.stringify(received.args)).toBe(ARGS_TEXT);
  });

  it("is recorded with that key under audit.arguments clear", async () => {
    const { gw, cat } = gateway(["--approval", "none", "--audit-arguments", "clear"]);
    await gw.initialize();
    await gw.request("tools/list");
    gw.send(
      `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"write","arguments":${ARGS_TEXT}}}\n`,
    );
    expect((await gw.next((m) => m.id === "c1")).error).toBeUndefined();
    expect(JSON.stringify(cat.records()[0]?.args)).toBe(ARGS_TEXT);
    gw.closeStdin();
    await gw.exited;
    const called = (await auditEvents(gw.stateDir)).filter((e) => e.type === "tool_called");
    expect(called).toHaveLength(1);
    expect(JSON.stringify(called[0]!.arguments)).toBe(ARGS_TEXT);
  });
});
