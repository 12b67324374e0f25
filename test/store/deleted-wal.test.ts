// A store's -wal and -shm files deleted while a gateway has the store open: that gateway goes on
// writing into a log no other process can see, a gateway started afterwards writes a new one, and
// when the first ended last SQLite copied its orphaned log over the database file and deleted the
// second's -wal: every record of the second was gone, nothing said. The first must notice, refuse
// what it can no longer record, say so once naming the file, and end without that copy.
// Real gateways, real processes, one state directory.
import { rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { auditActivity } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { removeDir } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Client = Session<import("@modelcontextprotocol/sdk/client/index.js").Client>;

async function gateway(stateDir: string, label: string, env: Record<string, string> = {}): Promise<Client> {
  const gw = await startGateway({
    args: ["--label", label, "--approval", "none", "--", ...fixtureCommand("echo")],
    stateDir,
    env,
    connectTimeoutMs: 60_000,
  });
  cleanup.push(() => gw.close());
  return gw;
}

const echo = (gw: Client, message: string) =>
  gw.client.callTool({ name: "echo", arguments: { message } }, undefined, { timeout: 60_000 });

/**
 * The first gateway records calls; `deleted` are removed; a second gateway starts, records five
 * calls and ends while the first is still up (so the first is the store's last connection);
 * then the first notices (`notice`). Returns the first, ended.
 */
async function secondAfterDeletion(
  deleted: string[],
  checkMs: number,
  notice: (first: Client) => Promise<void>,
): Promise<{ first: Client; stateDir: string }> {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const first = await gateway(stateDir, "first", { PORTCULLIS_STORE_CHECK_MS: String(checkMs) });
  for (let i = 0; i < 3; i++) await echo(first, `first ${i}`);
  // their ends in the chain first: committed after the answers, one written after the deletion
  // would be refused there (the first noticing then, not where the test has it notice)
  await waitForAuditEvents(
    stateDir,
    (all) => all.filter((e) => e.type === "tool_result").length === 3,
    "the first's three results",
  );
  for (const side of deleted) rmSync(join(stateDir, `portcullis.db${side}`));
  const second = await gateway(stateDir, "second");
  for (let i = 0; i < 5; i++) expect((await echo(second, `second ${i}`)).isError).toBeFalsy();
  await second.close();
  await notice(first);
  return { first, stateDir };
}

/** The second's calls are in the store and the chain verifies; the first said so once and ended 2. */
async function expectSecondKept(first: Client, stateDir: string, file: string): Promise<void> {
  const second = (await auditActivity(stateDir)).filter((a) => a.server === "second");
  expect(second.map((a) => a.outcome)).toEqual(Array(5).fill("ok"));
  const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
  expect(verify.code, verify.stderr).toBe(0);
  const path = join(stateDir, file);
  const said = first
    .stderr()
    .split("\n")
    .filter((l) => l.includes("was deleted or replaced"));
  expect(said).toEqual([expect.stringContaining(`the store ${path} was deleted or replaced`)]);
  expect((await first.exited).code).toBe(2);
}

describe("the store's -wal and -shm deleted under a running gateway", () => {
  it("its next call is refused (audit_unavailable, naming the file), it ends, and a gateway started since keeps its records", async () => {
    const { first, stateDir } = await secondAfterDeletion(["-wal", "-shm"], 600_000, async (first) => {
      const late = (await echo(first, "after the deletion").catch((e: unknown) => e)) as {
        code?: number;
        data?: { error?: string; reason?: string };
      };
      expect(late.code).toBe(-32603);
      expect(late.data?.error).toBe("audit_unavailable");
      expect(late.data?.reason).toContain(join(first.stateDir ?? "", "portcullis.db-wal"));
      await first.exited; // on its own: its client did not leave
    });
    await expectSecondKept(first, stateDir, "portcullis.db-wal");
  }, 180_000);

  it("-shm alone: its client leaving, it notices (as it ends, at the latest) and leaves the store to the second", async () => {
    const { first, stateDir } = await secondAfterDeletion(["-shm"], 600_000, (first) => first.close());
    await expectSecondKept(first, stateDir, "portcullis.db-shm");
  }, 180_000);

  it("an idle gateway notices on its heartbeat and ends on its own", async () => {
    const { first, stateDir } = await secondAfterDeletion(["-wal", "-shm"], 200, async (first) => {
      await first.exited;
    });
    await expectSecondKept(first, stateDir, "portcullis.db-wal");
  }, 90_000);
});

describe("a -wal deleted while another process has the store open", () => {
  it("a command cannot read the store meanwhile, and says the -wal is missing, not only 'input/output error'", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    expect((await runCli(["status"], { stateDir })).code).toBe(0);
    const store = join(stateDir, "portcullis.db");
    // this test's process plays the gateway: frames in its -wal, described by the -shm
    const open = new Database(store);
    cleanup.push(() => void open.close());
    open.pragma("wal_autocheckpoint = 0");
    open.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(-1, "now");
    rmSync(`${store}-wal`);
    const r = await runCli(["audit", "verify"], { stateDir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${store}-wal does not hold`);
    expect(r.stderr).toContain("the -wal file is deleted while a process has the store open");
  });
});
