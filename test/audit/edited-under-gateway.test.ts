// A same-user process edits the audit chain in the store while a gateway is running: it removes
// the last records (the gateway's own), or removes them and seals forged ones in their place (the
// audit public key is public). The bare chain cannot tell a cut-off or rewritten tail from an
// honest one; the gateway can, for the records it wrote itself: it remembers the seq and hash of
// its last record. Its next record must then not cover the edit: it is chained to the record as
// the gateway wrote it, so `audit verify` fails there, and the gateway says so on stderr. Before,
// the gateway chained its next record onto whatever head it found, and the edit verified.
// Real gateway, real echo server, the attacker is this test process with the store open.
import { afterEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { openStore, type Store } from "../../src/store/db.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

type Client = Session<import("@modelcontextprotocol/sdk/client/index.js").Client>;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function gatewayWithCalls(calls: number): Promise<{ gw: Client; stateDir: string; db: Store }> {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const gw = await startGateway({
    args: ["--label", "edited", "--approval", "none", "--", ...fixtureCommand("echo")],
    stateDir,
    connectTimeoutMs: 60_000,
  });
  cleanup.push(() => gw.close());
  for (let i = 0; i < calls; i++) expect((await echo(gw, `before ${i}`)).isError).toBeFalsy();
  const db = openStore(stateDir);
  cleanup.push(() => void db.close());
  // The last call's result is written just after its answer, with its open intent's row removed
  // in the same transaction: once no intent is open, the head is the gateway's last record.
  const open = db.prepare("SELECT count(*) FROM open_intents").pluck();
  while ((open.get() as number) > 0) await new Promise((r) => setTimeout(r, 20));
  db.exec("DROP TRIGGER audit_records_no_delete");
  return { gw, stateDir, db };
}

const echo = (gw: Client, message: string) =>
  gw.client.callTool({ name: "echo", arguments: { message } }, undefined, { timeout: 60_000 });

/** Removes the `n` last records in one transaction; returns the head seq before. */
function cutTail(db: Store, n: number): number {
  return db
    .transaction(() => {
      const head = db.prepare("SELECT max(seq) FROM audit_records").pluck().get() as number;
      db.prepare("DELETE FROM audit_records WHERE seq > ?").run(head - n);
      return head;
    })
    .immediate();
}

const forged = (i: number) => ({
  type: "tool_called" as const,
  run: "01JQ7R1ZC2M7W1DXQ8Z2K9V4B6",
  serverLabel: "edited",
  requestId: `forged ${i}`,
  tool: "echo",
  epoch: "01JQ7R4S4S0QJ7GZP1S2X3Y4Z5",
  revision: 1,
});

async function verify(stateDir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(["audit", "verify", "--json", "--state-dir", stateDir]);
}

describe("the audit chain edited in the store under a running gateway", () => {
  it("its last records removed: the gateway's next record does not cover the cut; verify fails there, and the gateway said so", async () => {
    const { gw, stateDir, db } = await gatewayWithCalls(3);
    const head = cutTail(db, 2); // the last call's intent and result
    expect((await verify(stateDir)).code).toBe(0); // the bare chain cannot tell
    expect((await echo(gw, "after the cut")).isError).toBeFalsy();
    await gw.close();
    const v = await verify(stateDir);
    expect(v.code, v.stdout).toBe(1);
    expect(JSON.parse(v.stdout)).toMatchObject({ ok: false, seq: head - 1 });
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => gw.stderr().includes(`record ${head}, which this gateway wrote`),
      20_000,
      "the gateway's line on the cut",
    );
    expect(gw.stderr()).toContain(`record ${head}, which this gateway wrote, is no longer in the store`);
  }, 90_000);

  it("its last record replaced by a forged one at the same seq: verify fails at the gateway's next record", async () => {
    const { gw, stateDir, db } = await gatewayWithCalls(2);
    const head = cutTail(db, 1);
    AuditLog.open(db, stateDir).append(forged(0));
    expect((await verify(stateDir)).code).toBe(0);
    expect((await echo(gw, "after the forgery")).isError).toBeFalsy();
    await gw.close();
    const v = await verify(stateDir);
    expect(v.code, v.stdout).toBe(1);
    expect(JSON.parse(v.stdout)).toMatchObject({ ok: false, seq: head + 1 });
  }, 90_000);

  it("its last records replaced by more forged ones, past its last seq: verify fails at the gateway's next record, and the gateway said so", async () => {
    const { gw, stateDir, db } = await gatewayWithCalls(2);
    const head = cutTail(db, 2);
    const forger = AuditLog.open(db, stateDir);
    for (let i = 0; i < 4; i++) forger.append(forged(i));
    expect((await verify(stateDir)).code).toBe(0);
    expect((await echo(gw, "after the forgery")).isError).toBeFalsy();
    await gw.close();
    const v = await verify(stateDir);
    expect(v.code, v.stdout).toBe(1);
    expect(JSON.parse(v.stdout)).toMatchObject({ ok: false, seq: head + 3 });
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => gw.stderr().includes(`record ${head}, which this gateway wrote`),
      20_000,
      "the gateway's line on the forgery",
    );
    expect(gw.stderr()).toContain(`record ${head}, which this gateway wrote, was changed in the store`);
  }, 90_000);

  it("records written by other processes after the gateway's last are not taken for an edit", async () => {
    const { gw, stateDir, db } = await gatewayWithCalls(1);
    const other = AuditLog.open(db, stateDir);
    for (let i = 0; i < 3; i++) other.append(forged(i));
    expect((await echo(gw, "after another writer")).isError).toBeFalsy();
    await gw.close();
    const v = await verify(stateDir);
    expect(v.code, v.stdout).toBe(0);
    expect(gw.stderr()).not.toContain("which this gateway wrote");
  }, 90_000);
});
