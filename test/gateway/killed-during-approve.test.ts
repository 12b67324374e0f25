// A gateway SIGKILLed while a human is approving its call's request: `portcullis approve` closes
// the requests of gone gateways when it starts (src/approval/abandoned.ts), but the human then
// reads the review and types the passphrase, which takes seconds. A gateway killed in that window
// must not have its request approved: its call can never run, its run can never use the grant,
// and "approved … grant (session, until agent-run-ends)" would not be the truth. The kill point is
// made observable: the passphrase comes from a FIFO, so `approve` waits at the passphrase (after
// its sweep, after the review and its "the passphrase confirms it" line) until the test writes it.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { auditEvents, storedPending } from "../helpers/approvals.js";
import { capture } from "../helpers/exitWithOutput.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function rows(stateDir: string, sql: string, ...params: unknown[]): Record<string, unknown>[] {
  const db = openStore(stateDir);
  try {
    return db.prepare(sql).all(...params) as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

/** `portcullis approve ID --for FOR`, its passphrase read from a FIFO the test writes when it chooses. */
function approveWaitingForPassphrase(stateDir: string, id: string, forWhat: "call" | "session") {
  const fifo = join(tempDir("portcullis-fifo-"), "passphrase");
  expect(spawnSync("mkfifo", ["-m", "600", fifo]).status).toBe(0);
  const child: ChildProcess = spawn(NODE, [CLI, "approve", id, "--for", forWhat, "--state-dir", stateDir], {
    env: hostEnv({ PORTCULLIS_PASSPHRASE_FILE: fifo, PORTCULLIS_INSECURE_TEST_KDF: "1" }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  // its output read to the end too: what approve said is read once it exited
  const output = capture(child);
  const exited = output.exited.then(({ code }) => code);
  cleanup.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  return {
    output: output.both,
    exited,
    /** the human finishes typing: blocks until `approve` opens the FIFO (it is waiting in open) */
    typePassphrase: () => writeFileSync(fifo, `${TEST_PASSPHRASE}\n`),
  };
}

async function gatewayWithACallWaiting(mode: "per-call" | "session"): Promise<RawGateway> {
  const stateDir = newStateDir();
  const gw = rawGateway({
    args: ["--label", "echo", "--approval", mode, "--approval-timeout", "60000", "--", NODE, FIXTURES.echo],
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  await gw.request("tools/list");
  gw.send({
    jsonrpc: "2.0",
    id: "c1",
    method: "tools/call",
    params: { name: "echo", arguments: { message: "hi" } },
  });
  return gw;
}

describe("a gateway killed while its call's request is being approved", () => {
  for (const [mode, forWhat] of [
    ["per-call", "call"],
    ["session", "session"],
  ] as const) {
    it(`approve --for ${forWhat}: the dead gateway's request is not approved, no grant is made, and the next gateway finds it closed`, async () => {
      const gw = await gatewayWithACallWaiting(mode);
      const { stateDir } = gw;
      const req = await waitFor(() => storedPending(stateDir)[0], 15_000, "the call's approval request");

      const approve = approveWaitingForPassphrase(stateDir, req.request, forWhat);
      // approve has swept the abandoned requests, shown the review and is asking for the passphrase
      await waitFor(() => /the passphrase confirms it/.test(approve.output()), 15_000, "approve to ask");
      gw.kill("SIGKILL");
      await gw.exited;
      approve.typePassphrase();
      const code = await approve.exited;

      // what approve told the human, and what it wrote
      const granted = rows(stateDir, "SELECT grant_id, mode FROM grants WHERE agent_run = ?", req.agentRun);
      const state = rows(stateDir, "SELECT state FROM approval_requests WHERE request = ?", req.request)[0]
        ?.state;
      const decisions = (await auditEvents(stateDir)).filter((e) => e.type === "approval_granted");
      expect(
        {
          failed: code !== 0,
          said: approve.output().match(/^approved .*$/m)?.[0] ?? null,
          granted,
          decisions,
        },
        approve.output(),
      ).toEqual({ failed: true, said: null, granted: [], decisions: [] });
      // closed, or left for the next lister to close: never decided
      expect(["expired", "pending"]).toContain(state);

      // and the next gateway and every command agree
      const next = rawGateway({
        args: ["--label", "echo", "--approval", "none", "--", NODE, FIXTURES.echo],
        stateDir,
      });
      cleanup.push(() => next.close());
      await next.initialize();
      expect((await runCli(["approvals", "--json", "--state-dir", stateDir])).stdout).toMatch(
        /"requests": \[\]/,
      );
      expect(JSON.parse((await runCli(["grants", "--json", "--state-dir", stateDir])).stdout).grants).toEqual(
        [],
      );
      expect(rows(stateDir, "SELECT state FROM approval_requests WHERE request = ?", req.request)).toEqual([
        { state: "expired" },
      ]);
      expect((await runCli(["audit", "verify", "--state-dir", stateDir])).code).toBe(0);
      // (two gateways and five CLI runs: 18-25 s on a loaded 2-CPU machine, past a 20 s bound)
    }, 60_000);
  }
});
