// A hostile client writes a guarded method as a JSON-RPC *notification* (no "id"): a tools/call,
// a resources/read or a prompts/get that asks for no answer. JSON-RPC 2.0 has a server run a
// notification's method all the same ("the Client's lack of interest in the corresponding
// Response object"), and a server on a generic JSON-RPC dispatcher, or a hand-rolled one such
// as the lenient fixture (which folds names as a careless server does and runs whatever method
// it gets), does. The guard must see it: a guarded method (or a name that folds to one) must
// never reach the server as a notification, whatever the approval mode. It did: the gateway relayed
// every notification but `notifications/initialized` and `notifications/cancelled` unchanged, and
// the call ran with no approval and no audit record. Only methods under `notifications/` are
// relayed now, and not another spelling of the two the gateway acts on.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { storedPending } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Logged {
  method: string;
  params: { name?: string; uri?: string; arguments?: { message?: string } } | null;
}

function lenient(args: string[]): { gw: RawGateway; received: () => Logged[] } {
  const dir = tempDir("pc-hostile-notif-");
  const methodLog = join(dir, "methods.jsonl");
  const gw = rawGateway({
    args: ["--label", "lenient", ...args, "--", NODE, FIXTURES.lenient],
    env: { FIXTURE_METHOD_LOG: methodLog },
  });
  cleanup.push(() => removeDir(dir));
  cleanup.push(() => gw.close());
  return { gw, received: () => (existsSync(methodLog) ? readJsonLines<Logged>(methodLog) : []) };
}

const MARK = "unapproved-via-notification";
const folded = (m: string) => m.trim().toLowerCase();

describe("a guarded method sent as a notification (no id)", () => {
  it("never reaches the server: a tools/call notification would run with no approval and no record", async () => {
    // default approval (session): every tools/call must wait for a human first
    const { gw, received } = lenient([]);
    expect((await gw.initialize()).error).toBeUndefined();
    expect((await gw.request("tools/list")).error).toBeUndefined();

    gw.send({ jsonrpc: "2.0", method: "tools/call", params: { name: "echo", arguments: { message: MARK } } });
    // a name that folds to tools/call: refused as a request, but as a notification?
    gw.send({
      jsonrpc: "2.0",
      method: "Tools/Call ",
      params: { name: "echo", arguments: { message: MARK } },
    });
    // the protocol's own notifications still reach it; a look-alike of the one the gateway acts on
    // (a cancellation that would name the gateway's own requests at a lenient server) does not
    gw.send({ jsonrpc: "2.0", method: "notifications/roots/list_changed" });
    gw.send({ jsonrpc: "2.0", method: "notifications/Cancelled", params: { requestId: 0 } });
    // then a request the server answers: everything written before it has reached the server
    expect((await gw.request("ping")).error).toBeUndefined();
    await waitFor(() => received().some((m) => m.method === "ping"), 10_000, "the ping at the server");
    const notified = received().filter((m) => m.method.startsWith("notifications/"));
    expect(notified.map((m) => m.method)).toContain("notifications/roots/list_changed");
    expect(notified.map((m) => m.method)).not.toContain("notifications/Cancelled");
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /dropped a notification of "tools\/call" from the client/.test(gw.stderr()),
      20_000,
      "the gateway's line on the dropped notification",
    );
    expect(gw.stderr()).toMatch(/dropped a notification of "tools\/call" from the client/);

    const calls = received().filter((m) => folded(m.method) === "tools/call");
    // nobody approved anything: no request was even put to a human
    expect(storedPending(gw.stateDir)).toEqual([]);
    expect(calls, JSON.stringify(calls)).toEqual([]);
  });

  it("a resources/read or prompts/get notification never reaches the server unrecorded either", async () => {
    const { gw, received } = lenient(["--approval", "none"]);
    expect((await gw.initialize()).error).toBeUndefined();
    gw.send({ jsonrpc: "2.0", method: "resources/read", params: { uri: `file:///${MARK}` } });
    gw.send({ jsonrpc: "2.0", method: "prompts/get", params: { name: MARK } });
    expect((await gw.request("ping")).error).toBeUndefined();
    await waitFor(() => received().some((m) => m.method === "ping"), 10_000, "the ping at the server");
    const reads = received().filter((m) => ["resources/read", "prompts/get"].includes(folded(m.method)));
    // a read must at least be recorded (request_forwarded) before it is sent; as a notification
    // it is neither recorded nor decided
    expect(reads, JSON.stringify(reads)).toEqual([]);
  });
});
