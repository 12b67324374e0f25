// Situations of docs/refusals.md (rows -32050 and -32051) that no other test asserts, on real
// gateways over real pipes, decided by the real CLI:
//   - a call waiting for a human when its connection ends is told so (reconnect), not sent to a
//     request that closes with the run;
//   - a call still waiting for a human when supervision is given up (the server keeps crashing
//     under onChange disconnect) is answered authorization_required, and its request closes with
//     the run ("agent run ended");
//   - authorization_stale after an epoch change names, in `changedTools`, every tool the run's
//     older-epoch grants named (changed definition or not), and no other.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { openStoreToRead } from "../../src/store/db.js";
import { auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { readJsonLines, tempDir } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * A raw gateway (`--approval session`, `--on-change disconnect`) in front of the crashy fixture
 * serving its tool `noop` for ever, wrapped so that once `marker` exists the server exits with
 * code 1, at once and at every later start: a crash loop on demand. Its `noop` call waits for a
 * human (nobody decides within the test: the approval timeout is far beyond it); resolves once
 * the request exists, with its id.
 */
async function callWaitingForHuman() {
  const dir = tempDir("portcullis-crash-on-demand-");
  const marker = join(dir, "crash-now");
  const received = join(dir, "received.jsonl");
  const server = join(dir, "server.mjs");
  writeFileSync(
    server,
    [
      'import { existsSync } from "node:fs";',
      `const marker = ${JSON.stringify(marker)};`,
      "if (existsSync(marker)) process.exit(1);",
      "setInterval(() => existsSync(marker) && process.exit(1), 25);",
      `await import(${JSON.stringify(pathToFileURL(FIXTURES.crashy).href)});`,
      "",
    ].join("\n"),
  );
  const gw: RawGateway = rawGateway({
    args: [
      "--label",
      "crashy",
      "--approval",
      "session",
      "--approval-timeout",
      "600000",
      "--on-change",
      "disconnect",
      "--",
      NODE,
      server,
    ],
    // FIXTURE_CLOSE=on-call: crashy serves without end; respawns 20 ms apart (lifecycle.test.ts)
    env: { FIXTURE_CLOSE: "on-call", FIXTURE_RECEIVED: received, PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  expect((await gw.request("tools/list")).result).toBeDefined();
  gw.send({ jsonrpc: "2.0", id: "waits", method: "tools/call", params: { name: "noop", arguments: {} } });
  const { request } = await nextStoredRequest(gw.stateDir);
  const answer = () => gw.next((m) => m.id === "waits" && m.method === undefined, 30_000);
  const calledAtServer = () => readJsonLines(received).filter((r) => r.method === "tools/call");
  return { gw, request, marker, answer, calledAtServer };
}

/** The request's row, read as the CLI would (state and why it closed). */
function requestRow(stateDir: string, request: string): unknown {
  const db = openStoreToRead(stateDir);
  try {
    return db.prepare("SELECT state, reason FROM approval_requests WHERE request = ?").get(request);
  } finally {
    db.close();
  }
}

describe("-32050 authorization_required", () => {
  it("a call waiting when its client closes its input: the answer says the connection ends and the request closes with the run, and sends no human to approve it", async () => {
    const { gw, request, answer } = await callWaitingForHuman();
    gw.closeStdin();
    const { error } = await answer();
    expect(error).toEqual({
      code: -32050,
      message: "This call needs a human approval, and the connection ends before one was given.",
      data: {
        error: "authorization_required",
        reason: "the connection ends: its approval request closes with the agent run",
        retry: "reconnect, then retry: the call asks a human again",
        approvalRequest: request,
        howToApprove:
          "reconnect and call again: this request closes with the ended run and cannot be approved",
      },
    });
    await gw.exited;
    expect(requestRow(gw.stateDir, request)).toEqual({ state: "cancelled", reason: "agent run ended" });
    // what a human would have been sent to before: the request, no longer approvable
    const ran = await runCli(["approve", request, "--state-dir", gw.stateDir, "--for", "session"], {
      env: passphraseEnv(),
    });
    expect(ran.stderr).toContain(`approval request ${request} is no longer pending: it was cancelled`);
  });

  it("a call still waiting when supervision is given up (the server keeps crashing) is answered authorization_required before the connection ends, and its request closed with the run", async () => {
    const { gw, request, marker, answer, calledAtServer } = await callWaitingForHuman();
    writeFileSync(marker, ""); // the server exits now, and at each of its restarts
    const { error } = await answer();
    expect(error?.code).toBe(-32050);
    expect(error?.data).toMatchObject({
      error: "authorization_required",
      reason: "the connection ends: its approval request closes with the agent run",
      approvalRequest: request,
    });
    // the connection ends because supervision stopped, not because the client left
    expect((await gw.exited).code).toBe(1);
    expect(gw.stderr()).toMatch(/exited with code 1 5 times within 30 s; supervision stopped/);
    // the request is closed with the run, and recorded so
    expect(requestRow(gw.stateDir, request)).toEqual({ state: "cancelled", reason: "agent run ended" });
    const closed = (await auditEvents(gw.stateDir)).filter((e) => e.type === "approval_expired");
    expect(closed).toEqual([
      expect.objectContaining({ approvalRequest: request, tool: "noop", reason: "agent run ended" }),
    ]);
    // nobody approved: no server process ever received the call
    expect(calledAtServer()).toEqual([]);
  });
});

describe("-32051 authorization_stale", () => {
  it("after an epoch change, changedTools names exactly the tools the run's older-epoch grants named, changed definition or not", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    project.release(); // slow_write answers at once
    const gw = await startInventory(project, ["--on-change", "restart", "--approval-timeout", "30000"], {
      stateDir,
      credentials: true,
    });
    cleanup.push(() => gw.close());
    const before = (await gw.client.listTools()).tools;

    // three tools approved for the session under revision A; crash_now is never approved
    const seen = new Set<string>();
    const calls = [
      { name: "read_status", arguments: {} },
      { name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } },
      { name: "slow_write", arguments: { note: "n" } },
    ];
    for (const call of calls) {
      const done = gw.client.callTool(call);
      const req = await nextStoredRequest(stateDir, seen);
      expect(req.tool).toBe(call.name);
      await decideByCli(stateDir, "approve", req.request, "--for", "session");
      expect((await done).isError).toBeFalsy();
    }

    // rebuilt to B: adjust_inventory gains a required field, read_status and slow_write are the same
    project.rebuild("B");
    const epochs = await gw.waitForStderr(
      /new execution epoch: pid=\d+ epoch=\S+ \(was \S+; restart\)/,
      15_000,
    );
    const [, now, old] = /epoch=(\S+) \(was (\S+);/.exec(epochs)!;
    // the client lists again (it is not behind: no seenRevision); one granted tool's definition
    // changed, the other two's did not
    const after = (await gw.client.listTools()).tools;
    const changed = after.filter(
      (t) => JSON.stringify(t) !== JSON.stringify(before.find((b) => b.name === t.name)),
    );
    expect(changed.map((t) => t.name)).toEqual(["adjust_inventory"]);

    const stale = (await gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e)) as {
      code: number;
      data: Record<string, unknown>;
    };
    expect(stale.code).toBe(-32051);
    expect(stale.data).toEqual({
      error: "authorization_stale",
      reason: "server execution epoch changed",
      retry: "refresh tool metadata and request authorization",
      approvedEpoch: old,
      currentEpoch: now,
      changedTools: expect.any(Array),
    });
    // the doc gives no order: compared sorted. Not the one tool called, not only the one changed,
    // not crash_now (listed, never granted)
    expect([...(stale.data.changedTools as string[])].sort()).toEqual([
      "adjust_inventory",
      "read_status",
      "slow_write",
    ]);
  });
});
