// A server that answers one call three times, exits while two calls wait on it, and (its
// successor) closes its stdout while a call waits and stays alive. Each call must end once for the
// client and once in the audit: the later answers are dropped as under an unknown id (the call's
// pending entry is taken at its first answer, src/gateway/inFlight.ts `take`, read by
// src/gateway/serverMessages.ts), calls in flight at an exit end as epoch_transition, once
// (inFlight.ts); the process that stopped talking but lives on is ended by the gateway, and the
// gateway serves the next process. Real gateway, real fixture server (hostile-catalog.mjs).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { completeLines } from "../helpers/completeLines.js";
import { sleep, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { scriptedCatalogGateway } from "../helpers/scriptedCatalog.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SCRIPT = `
import { appendFileSync } from "node:fs";
import { dirname, join } from "node:path";
const pids = join(dirname(process.env.FIXTURE_LOG), "pids");
appendFileSync(pids, process.pid + "\\n");
const tool = (name) => ({ name, inputSchema: { type: "object" } });
export function list() { return { tools: ["twice", "hang", "die", "linger", "whoami"].map(tool) }; }
export function call(p, state, send, id) {
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  switch (p.name) {
    case "twice":
      // the same answer again, and another one, under the id the first answer freed
      setTimeout(() => send({ jsonrpc: "2.0", id, result: text("second answer") }), 100);
      setTimeout(() => {
        send({ jsonrpc: "2.0", id, error: { code: -32000, message: "third" } });
        appendFileSync(join(dirname(pids), "third-sent"), "");
      }, 200);
      return text("first answer");
    case "die":
      setTimeout(() => process.exit(3), 200);
      return new Promise(() => {});
    case "linger":
      setTimeout(() => { process.stdout.end(); setInterval(() => {}, 1000); }, 200);
      return new Promise(() => {});
    case "whoami":
      return text(String(process.pid));
    default:
      return new Promise(() => {});
  }
}`;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The audit's records of the call the client sent under `id`. */
const ofCall = (events: Record<string, unknown>[], id: string) =>
  events.filter((e) => e.requestId === id).map((e) => e.type);

describe("a server that answers twice, dies mid-call, or stops talking while alive", () => {
  it("each call ends once for the client and once in the audit; the silent process is ended; the gateway serves the next", async () => {
    const { gw, dir } = await scriptedCatalogGateway({
      cleanup,
      args: ["--label", "ends", "--approval", "none"],
      script: SCRIPT,
    });
    const pids = () =>
      completeLines(readFileSync(join(dir, "pids"), "utf8"))
        .filter(Boolean)
        .map(Number);
    await gw.request("tools/list");
    const answersTo = (id: string): WireMessage[] => gw.messages().filter((m) => m.id === id);

    // answered three times: the first answer is the call's, the others are dropped
    gw.send({ jsonrpc: "2.0", id: "t1", method: "tools/call", params: { name: "twice", arguments: {} } });
    expect((await gw.next((m) => m.id === "t1")).result).toEqual({
      content: [{ type: "text", text: "first answer" }],
    });
    // once the third is written, an answer the server gives after it comes after it on the pipe:
    // the gateway has read both later answers by then (their warning is said once a minute, so
    // the log shows the first drop, not a line each)
    await waitFor(() => existsSync(join(dir, "third-sent")) || null, 10_000, "the third answer sent");
    await gw.request("tools/call", { name: "whoami", arguments: {} }, 10_000);
    expect(gw.stderr()).toMatch(/unknown id/);
    expect(answersTo("t1")).toHaveLength(1);

    // two calls in flight when the process exits: both end, as epoch_transition
    const [first] = pids();
    gw.send({ jsonrpc: "2.0", id: "h1", method: "tools/call", params: { name: "hang", arguments: {} } });
    gw.send({ jsonrpc: "2.0", id: "d1", method: "tools/call", params: { name: "die", arguments: {} } });
    for (const id of ["h1", "d1"])
      expect((await gw.next((m) => m.id === id, 10_000)).error).toMatchObject({
        code: -32054,
        data: { error: "epoch_transition", retried: false },
      });
    const served = async () => {
      const r = await gw.request("tools/call", { name: "whoami", arguments: {} }, 10_000);
      return r.result ? Number(r.result.content[0].text) : null;
    };
    const second = await waitFor(served, 15_000, "a call served by the respawned server");
    expect(second).not.toBe(first);

    // a process that closes its stdout and lives on: its call ends, and the gateway ends it
    gw.send({ jsonrpc: "2.0", id: "l1", method: "tools/call", params: { name: "linger", arguments: {} } });
    expect((await gw.next((m) => m.id === "l1", 10_000)).error).toMatchObject({
      data: { error: "epoch_transition" },
    });
    await waitFor(() => !alive(second) || null, 10_000, "the silent process ended by the gateway");
    const third = await waitFor(served, 15_000, "a call served by the next process");
    expect([first, second]).not.toContain(third);

    // every call has exactly one start and one end in the audit
    const events = await waitForAuditEvents(
      gw.stateDir,
      (all) => ["t1", "h1", "d1", "l1"].every((id) => ofCall(all, id).length >= 2),
      "the end of each call",
    );
    await sleep(300); // a doubled record would be committed by now, in the same group or the next
    const again = await waitForAuditEvents(gw.stateDir, () => true, "the audit");
    expect(again.length).toBeGreaterThanOrEqual(events.length);
    expect(ofCall(again, "t1")).toEqual(["tool_called", "tool_result"]);
    for (const id of ["h1", "d1", "l1"])
      expect(ofCall(again, id), id).toEqual(["tool_called", "call_interrupted"]);
    expect(again.filter((e) => e.type === "tool_result" && e.requestId === "t1")).toMatchObject([
      { outcome: "ok" },
    ]);
    expect((await gw.request("ping")).result).toEqual({});
  }, 30_000);
});
