// A client that probes in place (server/discover on the session pipe, as the v2 SDK's `auto`
// negotiation does with a transport that is not its own StdioClientTransport: docs/protocol-eras.md,
// "Connect = a probe…"), gets a legacy server's error, and falls back to the legacy era on the same
// pipe: initialize, notifications/initialized, then its calls. The session it negotiated is a
// legacy one (an initialize a server answered), so a call that waits for a human, from a client
// that declared URL elicitation while a console runs, is to be sent to the console with an
// `elicitation/create` beside the waiting call (docs/refusals.md), never answered at once with a
// 2026-07-28 `input_required` result, which a legacy client reads as an empty, successful result.

import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { consoleAddressPath, writeConsoleAddress } from "../../src/console/address.js";
import { nextStoredRequest, storedPending } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { completeLines } from "../helpers/completeLines.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const CONSOLE = "http://127.0.0.1:45997";
const ENVELOPE = modernMeta({ elicitation: { url: {} } }, { name: "in-place", version: "1" });

describe("a client that probes in place and falls back to the legacy era", () => {
  it("is a legacy session once its initialize is answered: a waiting call gets elicitation/create, never an input_required result", async () => {
    const stateDir = newStateDir();
    writeConsoleAddress(stateDir, CONSOLE);
    cleanup.push(() => rmSync(consoleAddressPath(stateDir), { force: true }));
    const cat = makeCatalog([
      {
        name: "lookup",
        description: "Look something up.",
        inputSchema: { type: "object", properties: { q: { type: "string" } } },
      },
    ]);
    cleanup.push(() => cat.cleanup());
    const gw = rawGateway({
      args: ["--label", "legacy", "--approval-timeout", "40000", "--", ...fixtureCommand("catalog")],
      env: cat.env,
      stateDir,
    });
    cleanup.push(() => gw.close());

    // the in-place probe: a legacy (v1 SDK) server does not know server/discover
    const probe = await gw.request("server/discover", { _meta: ENVELOPE }, 20_000);
    expect(probe.error).toBeDefined();
    // the SDK's fallback: the legacy handshake on the same pipe, declaring URL elicitation
    const init = await gw.initialize({
      protocolVersion: "2025-11-25",
      capabilities: { elicitation: { url: {} } },
      clientInfo: { name: "in-place", version: "1" },
    });
    expect(init.result).toBeDefined();
    const listed = await gw.request("tools/list", {}, 20_000);
    expect(listed.result).toBeDefined();

    gw.send({
      jsonrpc: "2.0",
      id: "call-1",
      method: "tools/call",
      params: { name: "lookup", arguments: { q: "x" } },
    });
    const req = await nextStoredRequest(stateDir);
    const first = await gw.next((m) => m.id === "call-1" || m.method === "elicitation/create", 20_000);
    // a legacy session: the console is offered with a request of the gateway's, the call waits.
    // (Today: the call is answered at once with {resultType:"input_required", …}, which a legacy
    // client's CallToolResultSchema reads as a successful result with content [].)
    expect((first.result as { resultType?: unknown } | undefined)?.resultType).not.toBe("input_required");
    expect(first.method).toBe("elicitation/create");
    expect(first.params).toMatchObject({ mode: "url", url: `${CONSOLE}/requests/${req.request}` });
    expect(storedPending(stateDir).map((p) => p.request)).toEqual([req.request]);
  }, 60_000);
});

/**
 * A gateway in front of the lenient fixture, refusing the client's server/discover probe as a
 * legacy server does: the gateway, the methods each server process received, and the probe sent.
 */
async function probedAndRefused() {
  const dir = tempDir();
  cleanup.push(() => removeDir(dir));
  const log = join(dir, "methods.jsonl");
  const refuse = join(dir, "refuse");
  writeFileSync(refuse, "Method not found: server/discover");
  const gw = rawGateway({
    args: ["--label", "lenient", "--approval", "none", "--", ...fixtureCommand("lenient")],
    env: { FIXTURE_METHOD_LOG: log, FIXTURE_INIT_REFUSE: refuse },
  });
  cleanup.push(() => gw.close());
  const methods = () =>
    completeLines(existsSync(log) ? readFileSync(log, "utf8") : "")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { method: string; pid: number });
  const probe = await gw.request("server/discover", { _meta: ENVELOPE }, 20_000);
  expect(probe.error).toBeDefined();
  rmSync(refuse);
  const initialize = () =>
    gw.initialize({
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "in-place", version: "1" },
    });
  return { gw, methods, initialize };
}

/** The methods the server process `pid` received before the client's initialize reached it. */
function beforeInitialize(methods: () => { method: string; pid: number }[], pid: number): string[] {
  const got = methods()
    .filter((m) => m.pid === pid)
    .map((m) => m.method);
  const at = got.indexOf("initialize");
  return at < 0 ? got : got.slice(0, at);
}

describe("a client that probed in place, then negotiated the legacy era, after its server process is replaced", () => {
  it("the new process is brought to the session's legacy handshake (its initialize replayed) before anything else", async () => {
    const { gw, methods, initialize } = await probedAndRefused();
    expect((await initialize()).result).toBeDefined();
    expect((await gw.request("tools/list", {}, 20_000)).result).toBeDefined();
    const first = methods()[0]!.pid;
    // nothing but the probe reaches the first process before the client's initialize: the gateway
    // fetches no catalog (and opens no subscription of its own) before a legacy handshake
    expect(beforeInitialize(methods, first)).toEqual(["server/discover"]);

    process.kill(first, "SIGKILL");
    const second = await waitFor(
      () => methods().find((m) => m.pid !== first)?.pid,
      30_000,
      "a second server process",
    );
    const call = await gw.request("tools/call", { name: "echo", arguments: { message: "hi" } }, 30_000);
    expect(call.error ?? call.result).toBeDefined();
    // the session negotiated with initialize: the new process gets it first (docs/protocol-eras.md,
    // "the handshake replayed to a new process is always the initialize a server answered"). It
    // got the gateway's own subscriptions/listen and tools/list with a 2026-07-28 envelope, then
    // the client's call, and never an initialize, while the refused probe fixed the era.
    expect(methods().filter((m) => m.pid === second)[0]?.method).toBe("initialize");
  }, 90_000);

  it("replaced before the client's initialize: the new process gets nothing of the gateway's own before it", async () => {
    // canFetch() was true for a session only the probe had made modern: the respawn's reconnect
    // (or a server's list_changed) sent listen and tools/list before the client's initialize
    const { gw, methods, initialize } = await probedAndRefused();
    const first = methods()[0]!.pid;
    process.kill(first, "SIGKILL");
    // the replacement is up (and brought to the session) before the client sends initialize
    await waitFor(() => /new execution epoch: .*; respawn\)/.test(gw.stderr()), 30_000, "the respawn");
    expect((await initialize()).result).toBeDefined();
    const second = await waitFor(
      () => methods().find((m) => m.pid !== first)?.pid,
      30_000,
      "a second process",
    );
    expect(beforeInitialize(methods, second)).toEqual([]);
  }, 60_000);
});
