// The signals that end a gateway: each one begins an orderly shutdown (the server's stdin is
// closed and it is given a grace), and a second one while that shutdown runs cuts the grace short
// instead of killing the gateway halfway: the server's process group is killed, the agent run,
// the status row and every call's intent are ended, and the gateway exits 0. Ended by a signal,
// the gateway would leave its server running under pid 1 and its rows open.
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { auditActivity, auditEvents } from "../helpers/approvals.js";
import { alive, readJsonLines, tempDir, waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { FIXTURES, fixtureCommand, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { type RawPeer, rawGateway, slowWriteAtServer } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Started {
  gw: Session<Client>;
  /** what the server noted: the requests it received, the end of its stdin, each SIGTERM */
  notes: () => { method?: string; pid?: number; stdinEnd?: number; sigterm?: number }[];
}

/** A gateway over the children fixture (`env`: its modes), with the catalog listed. */
async function start(env: Record<string, string>): Promise<Started> {
  const record = join(tempDir("pc-signals-"), "record.jsonl");
  const gw = await startGateway({
    args: ["--label", "kids", "--approval", "none", "--", NODE, FIXTURES.children],
    env: { FIXTURE_RECORD: record, ...env },
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { gw, notes: () => readJsonLines(record) };
}

/** Puts an until_stdin_end call at the server; resolves the server's pid once it is there. */
async function callInFlight({ gw, notes }: Started): Promise<{ pid: number; call: Promise<unknown> }> {
  const call = gw.client.callTool({ name: "until_stdin_end", arguments: {} }, undefined, {
    timeout: 120_000,
  });
  call.catch(() => {}); // awaited (or not) by the test
  const at = await waitFor(
    () => notes().find((n) => n.method === "tools/call"),
    15_000,
    "the call to reach the server",
  );
  return { pid: at.pid!, call };
}

/** What the store says is still open after the gateway ended. */
function leftOpen(stateDir: string): { intents: number; runs: number; gateways: number } {
  const db = openStore(stateDir);
  try {
    const count = (sql: string) => db.prepare(sql).pluck().get() as number;
    return {
      intents: count("SELECT count(*) FROM open_intents"),
      runs: count("SELECT count(*) FROM runs WHERE ended_at IS NULL"),
      gateways: count("SELECT count(*) FROM gateways WHERE ended_at IS NULL"),
    };
  } finally {
    db.close();
  }
}

/**
 * The gateway ended its own way: its rows and the call's intent closed, its chain whole. Returns
 * how the audit ended the call (outcome and interruption, as `audit activity` lists them).
 */
async function endedInOrder(gw: Session<Client>, server: number): Promise<[string, string | null][]> {
  expect(await gw.exited).toEqual({ code: 0, signal: null });
  const stateDir = gw.stateDir!;
  await waitFor(() => !alive(server), 10_000, "the server to be gone with its gateway");
  expect(leftOpen(stateDir)).toEqual({ intents: 0, runs: 0, gateways: 0 });
  expect((await runCli(["audit", "verify", "--state-dir", stateDir])).code).toBe(0);
  const calls = (await auditActivity(stateDir)).filter((a) => a.tool === "until_stdin_end");
  return calls.map((a) => [a.outcome, a.interruption]);
}

describe("a second signal while the gateway shuts down", () => {
  // The server hears neither the end of its stdin nor SIGTERM, and its grace is stretched far
  // beyond the test's timeout: only the second signal can end the shutdown in time.
  const stubborn = {
    FIXTURE_STDIN_END: "ignore",
    FIXTURE_IGNORE_TERM: "1",
    PORTCULLIS_SHUTDOWN_GRACE_MS: "600000",
  };

  for (const [first, second] of [
    ["SIGINT", "SIGINT"],
    ["SIGTERM", "SIGTERM"],
    ["SIGHUP", "SIGINT"],
    ["SIGQUIT", "SIGQUIT"],
  ] as const) {
    it(`${first} then ${second}: the server is killed at once and the gateway ends its rows and exits 0`, async () => {
      const started = await start(stubborn);
      const { gw, notes } = started;
      const { pid } = await callInFlight(started);
      gw.kill(first);
      // the shutdown is under way: the server's stdin was closed and it ran on
      await waitFor(() => notes().some((n) => n.stdinEnd === pid), 15_000, "the server's stdin to close");
      gw.kill(second);
      expect(await endedInOrder(gw, pid)).toEqual([["interrupted", "epoch_transition"]]);
      // it never got to SIGTERM: the grace was cut short by SIGKILL
      expect(notes().filter((n) => n.sigterm !== undefined)).toEqual([]);
    });
  }
});

describe("SIGQUIT (Ctrl-\\)", () => {
  it("ends the gateway as SIGTERM does: the server stopped, the call closed, the rows ended, exit 0", async () => {
    const started = await start({});
    const { pid, call } = await callInFlight(started);
    started.gw.kill("SIGQUIT");
    // the client is told, before the gateway exits: the process that had its call went away
    await expect(call).rejects.toMatchObject({
      code: -32054,
      data: { error: "epoch_transition", retried: false },
    });
    expect(await endedInOrder(started.gw, pid)).toEqual([["interrupted", "epoch_transition"]]);
    // it was stopped the orderly way: its stdin closed, which it exits on
    expect(started.notes().some((n) => n.stdinEnd === pid)).toBe(true);
  });
});

describe("a call the server answers while it winds down", () => {
  // The server finishes its calls when its stdin closes, then exits: the answer comes in the
  // grace the shutdown gives it, and it is the call's end, not an interruption.
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    it(`${signal}: the answer reaches the client under its id and is recorded as the call's result`, async () => {
      const started = await start({ FIXTURE_STDIN_END: "finish" });
      const { pid, call } = await callInFlight(started);
      started.gw.kill(signal);
      const result = (await call) as { content: { text: string }[] };
      expect(JSON.parse(result.content[0]!.text)).toEqual({ stdinEnded: pid });
      expect(await endedInOrder(started.gw, pid)).toEqual([["ok", null]]);
      expect(started.gw.stderr()).not.toMatch(/unknown id/);
    });
  }
});

describe("a signal while a call waits for a human", () => {
  // The client never stopped asking: the call gets its refusal before the client's output
  // closes, and the audit records it, as when the client closes its input (the same path).
  /**
   * A gateway whose call waits for an approval nobody gives; resolves once the request exists.
   * `waits`: its hold timeout and approval timeout, when not their defaults.
   */
  async function waiting(
    waits: string[] = ["--hold-timeout", "1000"],
  ): Promise<RawPeer & { stateDir: string }> {
    const gw = rawGateway({
      args: ["--label", "habits", "--approval", "session", ...waits, "--", ...fixtureCommand("habits")],
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    await gw.request("tools/list");
    gw.send({
      jsonrpc: "2.0",
      id: "waits",
      method: "tools/call",
      params: { name: "slow", arguments: { ms: 1 } },
    });
    await waitFor(
      () => /approval needed for "slow"/.test(gw.stderr()) || undefined,
      10_000,
      "the approval request",
    );
    return gw;
  }

  /** The call's answer, the audit's events after the request, and the request's row. */
  async function ended(gw: RawPeer & { stateDir: string }) {
    expect(await gw.exited).toEqual({ code: 0, signal: null });
    const answer = gw.messages().find((m) => m.id === "waits" && m.method === undefined);
    const all = await auditEvents(gw.stateDir);
    const after = all
      .slice(all.findIndex((e) => e.type === "approval_requested"))
      .map((e) => [e.type, e.reason ?? null, e.requestId ?? null]);
    const db = openStore(gw.stateDir);
    try {
      return { answer, after, rows: db.prepare("SELECT state, reason FROM approval_requests").all() };
    } finally {
      db.close();
    }
  }

  it("SIGTERM: the call is refused as on the input's close, and the audit ends the call and the request", async () => {
    const closed = await waiting();
    closed.closeStdin();
    const byClose = await ended(closed);
    const signalled = await waiting();
    signalled.kill("SIGTERM");
    const bySignal = await ended(signalled);
    expect(bySignal.answer?.error).toMatchObject({
      code: -32050,
      data: { error: "authorization_required" },
    });
    const byCloseData = byClose.answer?.error?.data as Record<string, unknown>;
    expect(bySignal.answer?.error?.data).toMatchObject({
      reason: byCloseData.reason,
      retry: byCloseData.retry,
    });
    // approval_requested, the call's refusal, the server's end, the request closed with the run, the run's end
    expect(bySignal.after).toEqual([
      ["approval_requested", null, null],
      ["authorization_denied", "authorization_required", "waits"],
      ["server_exited", null, null],
      ["approval_expired", "agent run ended", null],
      ["run_ended", null, null],
    ]);
    expect(bySignal.after).toEqual(byClose.after);
    expect(bySignal.rows).toEqual([{ state: "cancelled", reason: "agent run ended" }]);
    expect(bySignal.rows).toEqual(byClose.rows);
  });

  it("the input's close answers the waiting call at once, not after the hold; the request closes with the run, recorded once", async () => {
    // Hold and approval timeouts far beyond the test's: only the input's close can end the wait.
    const gw = await waiting(["--hold-timeout", "600000", "--approval-timeout", "600000"]);
    const request = /run in a terminal: portcullis approve (\w+)/.exec(gw.stderr())![1]!;
    gw.closeStdin();
    const answer = await gw.next((m) => m.id === "waits" && m.method === undefined, 30_000);
    expect(answer.error).toMatchObject({
      code: -32050,
      data: { error: "authorization_required", approvalRequest: request },
    });
    const { after, rows } = await ended(gw);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => gw.stderr().includes("the connection ends: the call stops waiting"),
      20_000,
      "the gateway's line on the connection's end",
    );
    expect(gw.stderr()).toContain(
      `the connection ends: the call stops waiting; approval request ${request} closes with the agent run`,
    );
    expect(gw.stderr()).not.toMatch(/stays pending for a retry/);
    expect(rows).toEqual([{ state: "cancelled", reason: "agent run ended" }]);
    expect(after.filter(([type]) => type === "approval_expired")).toEqual([
      ["approval_expired", "agent run ended", null],
    ]);
    const closed = (await auditEvents(gw.stateDir)).filter((e) => e.type === "approval_expired");
    expect(closed).toEqual([
      expect.objectContaining({
        approvalRequest: request,
        tool: "slow",
        reason: "agent run ended",
        by: expect.stringMatching(/^the gateway of its run \(pid \d+\)$/),
      }),
    ]);
  });

  it("a call still at the server when the hold after the input's close runs out is refused shutting_down, and recorded interrupted", async () => {
    // The server never answers slow_write here (its release never comes): only the hold's end
    // answers the client, which must be told the request may or may not have taken effect.
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = rawGateway({
      args: [
        "--label",
        "inventory",
        "--approval",
        "none",
        "--hold-timeout",
        "1000",
        "--",
        ...project.command,
      ],
      cwd: project.dir,
      env: { ...project.env, FIXTURE_SLOW_TIMEOUT_MS: "600000" },
    });
    cleanup.push(() => gw.close());
    await gw.initialize({}, 20_000);
    await gw.request("tools/list", {}, 20_000);
    await slowWriteAtServer(gw, project);
    gw.closeStdin();
    const answer = await gw.next((m) => m.id === "slow" && m.method === undefined, 30_000);
    expect(answer.error).toMatchObject({
      code: -32603,
      data: {
        error: "shutting_down",
        reason: "client closed its input; server shutting down",
        retry: "check whether the request took effect before sending it again on a new connection",
      },
    });
    expect(await gw.exited).toMatchObject({ code: 0 });
    const activity = await auditActivity(gw.stateDir);
    expect(activity.find((a) => a.tool === "slow_write")).toMatchObject({ outcome: "interrupted" });
  });
});
