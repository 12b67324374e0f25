// The database file itself deleted or replaced under a running gateway (a restore copied over
// it, `mv` and `cp` back, `rm`): the gateway's connection goes on reading and checkpointing the
// old file while the processes that open the store since share the same -wal over the new one.
// Its checkpoint copied their frames into the old file and the log started over: the store at the
// path was left damaged ("is damaged (SQLite reports corruption)" after a few hundred calls).
// Over a deleted file, it answered calls whose records nobody would ever read. It must notice,
// refuse what it can no longer record naming the file, say so once, and end (exit 2).
// Real gateways, real processes, one state directory.
import { copyFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditActivity } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { removeDir, sleep } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Client = Session<import("@modelcontextprotocol/sdk/client/index.js").Client>;

async function gateway(stateDir: string, label: string): Promise<Client> {
  const gw = await startGateway({
    args: ["--label", label, "--approval", "none", "--", ...fixtureCommand("echo")],
    stateDir,
    // no heartbeat: the call is what must notice
    env: { PORTCULLIS_STORE_CHECK_MS: "600000" },
    connectTimeoutMs: 60_000,
  });
  cleanup.push(() => gw.close());
  return gw;
}

const echo = (gw: Client, message: string) =>
  gw.client.callTool({ name: "echo", arguments: { message } }, undefined, { timeout: 60_000 });

/**
 * The first gateway's three calls, each with its end in the chain: a call's end is committed after
 * its answer, and one committed after the files changed would be refused there (the gateway
 * noticing then, not at the next call, and ending before it).
 */
async function threeRecorded(gw: Client, stateDir: string): Promise<void> {
  for (let i = 0; i < 3; i++) expect((await echo(gw, `first ${i}`)).isError).toBeFalsy();
  await waitForAuditEvents(
    stateDir,
    (all) => all.filter((e) => e.type === "tool_result").length === 3,
    "the first's three results",
  );
}

/** The call is refused as one that cannot be recorded, naming the database file. */
async function expectRefused(gw: Client, db: string): Promise<void> {
  const late = (await echo(gw, "after the database changed").catch((e: unknown) => e)) as {
    code?: number;
    data?: { error?: string; reason?: string };
  };
  expect(late.code).toBe(-32603);
  expect(late.data?.error).toBe("audit_unavailable");
  expect(late.data?.reason).toContain(`the store ${db} was deleted or replaced`);
}

/** It said so once, in the sentence naming the database, and ended on its own with exit 2. */
async function expectEnded(gw: Client, db: string): Promise<void> {
  expect((await gw.exited).code).toBe(2);
  const said = gw
    .stderr()
    .split("\n")
    .filter((l) => l.includes("was deleted or replaced"));
  expect(said).toEqual([expect.stringContaining(`the store ${db} was deleted or replaced`)]);
}

describe("portcullis.db replaced or deleted under a running gateway", () => {
  it("replaced (mv, cp back): its next call is refused naming the database, it ends, and a gateway on the copy keeps its records and the chain", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = join(stateDir, "portcullis.db");
    const first = await gateway(stateDir, "first");
    await threeRecorded(first, stateDir);
    renameSync(db, join(stateDir, "moved.db"));
    copyFileSync(join(stateDir, "moved.db"), db);
    const second = await gateway(stateDir, "second");
    await expectRefused(first, db);
    await expectEnded(first, db);
    for (let i = 0; i < 5; i++) expect((await echo(second, `second ${i}`)).isError).toBeFalsy();
    await second.close();
    expect((await second.exited).code).toBe(0);
    const calls = await auditActivity(stateDir);
    expect(calls.map((a) => `${a.server} ${a.outcome}`)).toEqual([
      ...Array(3).fill("first ok"),
      ...Array(5).fill("second ok"),
    ]);
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
    expect(verify.code, verify.stderr).toBe(0);
  }, 180_000);

  it("deleted: its next call is refused naming the database (not answered into a file nobody will read), and it ends", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = join(stateDir, "portcullis.db");
    const first = await gateway(stateDir, "first");
    await threeRecorded(first, stateDir);
    rmSync(db);
    // past the 25 ms within which a group of intents is not checked again (src/audit/log.ts)
    await sleep(100);
    await expectRefused(first, db);
    await expectEnded(first, db);
  }, 120_000);
});
