// A 2026-07-28 listen the gateway could not send on is over for it, as one the server ended by
// answering it is (test/gateway/hostile-listen-ended-by-server.test.ts). After a new server
// process, the client's listens are re-opened there once its replayed handshake completes (the one
// it held, InFlight.reopenListens), and so is a listen the client opened while that handshake was
// under way (InFlight.handshakeDone). A server whose stdin breaks just then (the gateway gives a
// process whose pipe broke 500 ms to exit before it ends its epoch) takes none of them: each is
// answered server_unavailable. The gateway must then count them closed: none of its own
// notifications/tools/list_changed may go out under their ids at the next catalog change.
// Real gateway, raw client, the rawlines fixture: FIXTURE_RAW_BREAK_STDIN makes the second process
// hold the replayed server/discover, close its stdin, have the gateway write to it (its -32601 to a
// roots/list the client did not declare) and then answer, still running.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { servingPid } from "../helpers/serving.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SUB = "io.modelcontextprotocol/subscriptionId";
// no roots: the gateway answers the server's roots/list itself (a write to the broken pipe)
const META = modernMeta({}, { name: "listen-forward-failed-test", version: "1.0.0" });
const DISCOVER =
  '{"jsonrpc":"2.0","id":ID,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"rawlines","version":"1"}}}';
const HELD = "listen:held"; // open at the first process, re-opened after the handshake
const BEHIND = "listen:behind"; // sent while the second process's handshake is under way
const CHANGED = "tool catalog changed: revision";

function tool(name: string): object {
  return { name, description: `The tool ${name}.`, inputSchema: { type: "object", properties: {} } };
}

function count(text: string, part: string): number {
  return text.split(part).length - 1;
}

function listen(gw: RawGateway, id: string): void {
  gw.send({
    jsonrpc: "2.0",
    id,
    method: "subscriptions/listen",
    params: { notifications: { toolsListChanged: true, promptsListChanged: true }, _meta: META },
  });
}

/** The gateway's notifications/tools/list_changed the client got under listen `id`. */
function changedUnder(gw: RawGateway, id: string): WireMessage[] {
  return gw
    .messages()
    .filter(
      (m) =>
        m.method === "notifications/tools/list_changed" &&
        (m.params as { _meta?: Record<string, unknown> } | undefined)?._meta?.[SUB] === id,
    );
}

describe("a 2026-07-28 listen the gateway could not send to a new process", () => {
  it("is answered server_unavailable and over for the gateway: no list_changed under its id afterwards (re-opened, or sent once the handshake completed)", async () => {
    const dir = tempDir("portcullis-listen-forward-failed-");
    const tools = join(dir, "tools.json");
    const log = join(dir, "raw.log");
    const brk = join(dir, "break");
    writeFileSync(tools, JSON.stringify([tool("one")]));
    const gw = rawGateway({
      args: ["--label", "rawlines", "--approval", "none", "--", NODE, FIXTURES.rawlines],
      env: {
        FIXTURE_RAW_LOG: log,
        FIXTURE_RAW_TOOLS_FILE: tools,
        FIXTURE_RAW_ANSWERS: JSON.stringify({ "subscriptions/listen": null, "server/discover": DISCOVER }),
        FIXTURE_RAW_BREAK_STDIN: brk,
        PORTCULLIS_RESPAWN_BACKOFF_MS: "20",
      },
    });
    cleanup.push(
      () => gw.close(),
      () => removeDir(dir),
    );
    const received = (): { id?: unknown; method?: string }[] => {
      if (!existsSync(log)) return [];
      const out: { id?: unknown; method?: string }[] = [];
      for (const l of completeLines(readFileSync(log, "utf8")).filter(Boolean)) {
        try {
          out.push(JSON.parse(JSON.parse(l) as string) as { id?: unknown; method?: string });
        } catch {
          // the last line may be partly written
        }
      }
      return out;
    };
    const discovers = () => received().filter((m) => m.method === "server/discover").length;

    // a 2026-07-28 session that discovered: a new process gets server/discover replayed
    const found = await gw.request("server/discover", { _meta: META }, 30_000);
    expect(found.error, JSON.stringify(found)).toBeUndefined();
    expect((await gw.request("tools/list", { _meta: META }, 30_000)).error).toBeUndefined();
    const listensBefore = received().filter((m) => m.method === "subscriptions/listen").length;
    listen(gw, HELD);
    await waitFor(
      () => received().filter((m) => m.method === "subscriptions/listen").length > listensBefore || undefined,
      20_000,
      "the client's listen at the server",
    );

    // the next process serves another list (a catalog change, taken at the third process), and
    // breaks its stdin during its replayed handshake
    const changesBefore = count(gw.stderr(), CHANGED);
    writeFileSync(tools, JSON.stringify([tool("one"), tool("two")]));
    writeFileSync(brk, "");
    const pid = servingPid(gw);
    process.kill(pid, "SIGKILL");
    await waitFor(() => discovers() >= 2 || undefined, 30_000, "the replayed server/discover");
    // a listen while the handshake is under way: kept behind it (a request the gateway answers
    // itself, sent after it, tells when it was read)
    listen(gw, BEHIND);
    const sync = await gw.request("tasks/list", { _meta: META }, 20_000);
    expect(sync.error).toBeDefined();
    writeFileSync(`${brk}.go`, "");

    // neither listen reached the second process: each is answered server_unavailable
    for (const id of [BEHIND, HELD]) {
      const answered = await gw.next((m) => m.id === id && m.method === undefined, 20_000);
      expect((answered.error?.data as { error?: string } | undefined)?.error, JSON.stringify(answered)).toBe(
        "server_unavailable",
      );
      // the process still runs: what is said is that its input is closed, not that none runs
      expect(answered.error?.message, JSON.stringify(answered)).toBe(
        "The server process is running, but its input pipe is closed, so this request could not be sent to it; portcullis stops that process and starts the server again, as after a crash.",
      );
      expect(answered.error?.data).toMatchObject({
        reason: "the server process's stdin is closed while the process still runs",
      });
    }

    // the third process's catalog differs from the first's: the change is told under no ended listen
    await waitFor(
      () => count(gw.stderr(), CHANGED) > changesBefore || undefined,
      30_000,
      "the new epoch's catalog change",
    );
    expect(servingPid(gw)).not.toBe(pid);
    expect((await gw.request("tools/list", { _meta: META }, 30_000)).error).toBeUndefined();
    expect(changedUnder(gw, HELD), JSON.stringify(gw.messages())).toEqual([]);
    expect(changedUnder(gw, BEHIND), JSON.stringify(gw.messages())).toEqual([]);
    // not re-opened at the third process either (the client was told they ended)
    const listens = received().filter(
      (m) =>
        m.method === "subscriptions/listen" &&
        (m as { params?: { notifications?: Record<string, unknown> } }).params?.notifications
          ?.promptsListChanged === true,
    );
    expect(listens, JSON.stringify(received())).toHaveLength(1);
    expect(gw.stderr()).toMatch(/closed its stdin/);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 120_000);
});
