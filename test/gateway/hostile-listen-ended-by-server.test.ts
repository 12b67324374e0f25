// 2026-07-28 (basic/patterns/subscriptions, "Graceful Closure"): a server ends a subscription by
// answering the subscriptions/listen request. The gateway relays that answer, and the listen must
// then be over for the gateway too, as when the client cancels it: none of the gateway's own
// notifications/tools/list_changed may go out under its id afterwards (the gateway sends one per
// open listen at each catalog change, stamped with the listen's id), it is not re-opened on a new
// server process, and a new listen the client opens under the same id (free once the answer came)
// gets exactly one notification per change, not one for itself and one for the listen that ended.
// Real gateway, raw client, the rawlines fixture: its listens are left open
// (FIXTURE_RAW_ANSWERS null) until the client has it write the answer (`raw/send`), and its tool
// list is a file (FIXTURE_RAW_TOOLS_FILE) that changes between two lists and two processes.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { modernMeta, subscriptionOf } from "../helpers/modernMeta.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { servingPid } from "../helpers/serving.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SUB = "io.modelcontextprotocol/subscriptionId";
const META = modernMeta({}, { name: "listen-ended-by-server-test", version: "1.0.0" });
const LISTEN_ID = "listen:0";

function tool(name: string): object {
  return {
    name,
    description: `The tool ${name}.`,
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
  };
}

interface Setup {
  gw: RawGateway;
  tools: string;
  /** what the server process(es) received, parsed (in the order read) */
  received: () => { id?: unknown; method?: string; params?: unknown }[];
}

async function setup(): Promise<Setup> {
  const dir = tempDir("portcullis-listen-ended-");
  const tools = join(dir, "tools.json");
  const log = join(dir, "raw.log");
  writeFileSync(tools, JSON.stringify([tool("one")]));
  const gw = rawGateway({
    args: ["--label", "rawlines", "--approval", "none", "--", NODE, FIXTURES.rawlines],
    env: {
      FIXTURE_RAW_LOG: log,
      FIXTURE_RAW_TOOLS_FILE: tools,
      FIXTURE_RAW_ANSWERS: JSON.stringify({ "subscriptions/listen": null }),
      PORTCULLIS_RESPAWN_BACKOFF_MS: "20",
    },
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  const received = () => {
    let text = "";
    try {
      text = readFileSync(log, "utf8");
    } catch {
      return [];
    }
    const out: { id?: unknown; method?: string }[] = [];
    // (the last line may be partly written)
    for (const l of text.split("\n").filter(Boolean)) {
      try {
        out.push(JSON.parse(JSON.parse(l) as string) as { id?: unknown; method?: string });
      } catch {
        // not whole yet, or not JSON (nothing this test sends)
      }
    }
    return out;
  };
  // the envelope makes the session 2026-07-28
  const listed = await gw.request("tools/list", { _meta: META }, 30_000);
  expect(listed.error, JSON.stringify(listed)).toBeUndefined();
  return { gw, tools, received };
}

/** The gateway's notifications/tools/list_changed the client got under its listen id. */
function changedUnderListen(gw: RawGateway): WireMessage[] {
  return gw
    .messages()
    .filter((m) => m.method === "notifications/tools/list_changed" && subscriptionOf(m) === LISTEN_ID);
}

/**
 * The client's listens the server received (its own, and any re-opened): told apart from the
 * gateway's own listen, which each process gets before the gateway's tools/list, by the prompt
 * notifications the client's also asks for.
 */
function listensAtServer(s: Setup): { id?: unknown }[] {
  return s
    .received()
    .filter(
      (m) =>
        m.method === "subscriptions/listen" &&
        (m as { params?: { notifications?: Record<string, unknown> } }).params?.notifications
          ?.promptsListChanged === true,
    );
}

function count(text: string, part: string): number {
  return text.split(part).length - 1;
}

const CHANGED = "tool catalog changed: revision";

/** Opens the client's listen LISTEN_ID and resolves once the server holds it: its wire id there. */
async function openListen(s: Setup): Promise<unknown> {
  const before = listensAtServer(s).length;
  s.gw.send({
    jsonrpc: "2.0",
    id: LISTEN_ID,
    method: "subscriptions/listen",
    params: { notifications: { toolsListChanged: true, promptsListChanged: true }, _meta: META },
  });
  const at = await waitFor(() => listensAtServer(s)[before], 20_000, "the listen at the server");
  return at.id;
}

/**
 * The server's tool list changes (the file), and it says so; resolves once the gateway has taken
 * the change (its log line), and a round trip later, so anything it sent the client for that change
 * is already read.
 */
async function catalogChanges(s: Setup, names: string[]): Promise<void> {
  const before = count(s.gw.stderr(), CHANGED);
  writeFileSync(s.tools, JSON.stringify(names.map(tool)));
  const sent = await s.gw.request(
    "raw/send",
    { lines: ['{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'], _meta: META },
    20_000,
  );
  expect(sent.error, JSON.stringify(sent)).toBeUndefined();
  await waitFor(
    () => count(s.gw.stderr(), CHANGED) > before || undefined,
    20_000,
    "the catalog change taken",
  );
  await s.gw.request("tools/list", { _meta: META }, 30_000);
}

/**
 * The server process is killed after its tool list changed: the next one serves the new list (a
 * change of the catalog, through a new epoch). Resolves once the new process has answered the
 * gateway's tools/list (anything re-opened there was written before it) and the change is taken.
 */
async function restartWithChange(s: Setup, names: string[]): Promise<void> {
  const before = count(s.gw.stderr(), CHANGED);
  const lists = s.received().filter((m) => m.method === "tools/list").length;
  const pid = servingPid(s.gw);
  writeFileSync(s.tools, JSON.stringify(names.map(tool)));
  process.kill(pid, "SIGKILL");
  await waitFor(
    () => count(s.gw.stderr(), CHANGED) > before || undefined,
    30_000,
    "the new epoch's catalog change",
  );
  expect(servingPid(s.gw)).not.toBe(pid);
  expect(s.received().filter((m) => m.method === "tools/list").length).toBeGreaterThan(lists);
  await s.gw.request("tools/list", { _meta: META }, 30_000);
}

/** The server ends the client's listen (at the server under `wire`) with `answer`; resolves with the answer the client got. */
async function serverEnds(s: Setup, wire: unknown, answer: object): Promise<WireMessage> {
  s.gw.send({
    jsonrpc: "2.0",
    id: "end",
    method: "raw/send",
    params: { lines: [JSON.stringify({ jsonrpc: "2.0", id: wire, ...answer })], _meta: META },
  });
  return s.gw.next((m) => m.id === LISTEN_ID && m.method === undefined, 20_000);
}

const CLOSED = { result: { resultType: "complete", _meta: { [SUB]: "server-side" } } };

describe("a subscriptions/listen the server ends by answering it (stdio)", () => {
  it("is over for the gateway: no list_changed under its id at a catalog change, nor through a new process, where it is not re-opened", async () => {
    const s = await setup();
    const wire = await openListen(s);
    // the server ends the listen: its answer, under the gateway's wire id, reaches the client
    const ended = await serverEnds(s, wire, CLOSED);
    expect(ended.error, JSON.stringify(ended)).toBeUndefined();
    expect((ended.result as { _meta?: Record<string, unknown> })._meta?.[SUB]).toBe(LISTEN_ID);

    // the catalog changes: nothing under the ended listen's id
    await catalogChanges(s, ["one", "two"]);
    expect(changedUnderListen(s.gw), JSON.stringify(s.gw.messages())).toEqual([]);

    // a new process, whose list differs again: the ended listen is not re-opened there, and is
    // told nothing of the change
    await restartWithChange(s, ["one", "two", "three"]);
    expect(listensAtServer(s), JSON.stringify(s.received())).toHaveLength(1);
    expect(changedUnderListen(s.gw)).toEqual([]);
    expect(s.gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 120_000);

  it("a new listen the client opens under its id is told once per change (a catalog change, a new process), not once more for the listen that ended", async () => {
    const s = await setup();
    const wire = await openListen(s);
    expect((await serverEnds(s, wire, CLOSED)).error).toBeUndefined();
    // the client listens again under the same id, free since the answer
    await openListen(s);
    await catalogChanges(s, ["one", "two"]);
    expect(changedUnderListen(s.gw), JSON.stringify(s.gw.messages())).toHaveLength(1);
    // through a new process: that listen (and only it) re-opened there, told once of the change
    await restartWithChange(s, ["one"]);
    expect(listensAtServer(s), JSON.stringify(s.received())).toHaveLength(3);
    expect(changedUnderListen(s.gw), JSON.stringify(s.gw.messages())).toHaveLength(2);
    // the client's first listen was answered once (by the server); the second is open
    expect(s.gw.messages().filter((m) => m.id === LISTEN_ID && m.method === undefined)).toHaveLength(1);
  }, 120_000);

  it("an error answer ends it too: no list_changed under its id afterwards, not re-opened", async () => {
    const s = await setup();
    const wire = await openListen(s);
    const ended = await serverEnds(s, wire, {
      error: { code: -32603, message: "Subscription limit reached" },
    });
    expect(ended.error, JSON.stringify(ended)).toBeDefined();
    await catalogChanges(s, ["one", "two"]);
    expect(changedUnderListen(s.gw), JSON.stringify(s.gw.messages())).toEqual([]);
    await restartWithChange(s, ["one", "two", "three"]);
    expect(listensAtServer(s), JSON.stringify(s.received())).toHaveLength(1);
    expect(changedUnderListen(s.gw)).toEqual([]);
  }, 120_000);
});
