// A same-user process cuts the store's -wal short (truncate, `: > portcullis.db-wal`) while a
// gateway has the store open. The file keeps its inode, so the check for a deleted or replaced
// file passes; but the -shm index still counts the frames that were cut off. The gateway went on
// committing after them, over a hole of zeros: its calls were forwarded with intents no other
// process could read ("damaged (SQLite reports corruption)" to every command), and as it closed,
// SQLite copied those zeros into the database file, which stayed damaged for good. Now the
// gateway notices (the -wal shorter than its index's frames), refuses the call audit_unavailable
// naming the file, ends (exit 2) without closing the store, and the store reads again afterwards.
// Real gateway, real echo server, one state directory.
import { statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { removeDir } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

type Client = Session<import("@modelcontextprotocol/sdk/client/index.js").Client>;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function gateway(stateDir: string, label: string): Promise<Client> {
  const gw = await startGateway({
    args: ["--label", label, "--approval", "none", "--", ...fixtureCommand("echo")],
    stateDir,
    connectTimeoutMs: 60_000,
  });
  cleanup.push(() => gw.close());
  return gw;
}

const echo = (gw: Client, message: string) =>
  gw.client.callTool({ name: "echo", arguments: { message } }, undefined, { timeout: 60_000 });

/** Waits until no call is open: the last call's result (and its frames) are in the -wal. */
async function settled(stateDir: string): Promise<void> {
  const db = openStore(stateDir);
  try {
    const open = db.prepare("SELECT count(*) FROM open_intents").pluck();
    while ((open.get() as number) > 0) await new Promise((r) => setTimeout(r, 20));
  } finally {
    db.close();
  }
}

describe("the store's -wal cut short under a running gateway", () => {
  it("its next call is refused (audit_unavailable, naming the -wal), it ends, and the store reads again afterwards", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const first = await gateway(stateDir, "first");
    for (let i = 0; i < 5; i++) expect((await echo(first, `before ${i}`)).isError).toBeFalsy();
    await settled(stateDir);
    const wal = join(stateDir, "portcullis.db-wal");
    truncateSync(wal, Math.floor(statSync(wal).size / 2));
    // A gateway checks the files before a group of intents at most once every 25 ms (a cut in
    // that window goes unseen: docs/audit-format.md); the cut is made after it, as an idle
    // gateway's would be.
    await new Promise((r) => setTimeout(r, 50));

    const late = (await echo(first, "after the cut").catch((e: unknown) => e)) as {
      code?: number;
      data?: { error?: string; reason?: string };
    };
    expect(late.data?.error, JSON.stringify(late)).toBe("audit_unavailable");
    expect(late.data?.reason).toContain(`the store ${wal} was cut short`);
    expect((await first.exited).code).toBe(2);
    expect(first.stderr()).toContain(`the store ${wal} was cut short`);

    // What was committed in the part cut off is gone (a cut tail: only a checkpoint shows it),
    // but the store is not damaged: it verifies, and a new gateway records its calls on it.
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
    expect(verify.code, verify.stderr).toBe(0);
    const second = await gateway(stateDir, "second");
    for (let i = 0; i < 3; i++) expect((await echo(second, `second ${i}`)).isError).toBeFalsy();
    await second.close();
    const after = await runCli(["audit", "verify", "--state-dir", stateDir]);
    expect(after.code, after.stderr).toBe(0);
  }, 90_000);

  it("a gateway whose client leaves after the cut ends without copying the hole into the database file", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const first = await gateway(stateDir, "first");
    for (let i = 0; i < 5; i++) expect((await echo(first, `before ${i}`)).isError).toBeFalsy();
    await settled(stateDir);
    const wal = join(stateDir, "portcullis.db-wal");
    truncateSync(wal, Math.floor(statSync(wal).size / 2));
    await first.close();
    expect((await first.exited).code).toBe(2);
    expect(first.stderr()).toContain(`the store ${wal} was cut short`);
    // Closed as before, the gateway made SQLite copy the cut -wal's zeros into the database
    // file: "damaged (SQLite reports corruption)" to every command, for good.
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
    expect(verify.code, verify.stderr).toBe(0);
    const status = await runCli(["status", "--state-dir", stateDir]);
    expect(status.code, status.stderr).toBe(0);
  }, 90_000);

  it("zeroed in place at its end (the length kept, as a cut filled out again leaves it): the next call is refused, and the store reads afterwards", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const first = await gateway(stateDir, "first");
    for (let i = 0; i < 5; i++) expect((await echo(first, `before ${i}`)).isError).toBeFalsy();
    await settled(stateDir);
    const wal = join(stateDir, "portcullis.db-wal");
    const size = statSync(wal).size;
    truncateSync(wal, Math.floor(size / 2));
    truncateSync(wal, size);
    await new Promise((r) => setTimeout(r, 50)); // past the 25 ms between two checks, as above
    const late = (await echo(first, "after the zeros").catch((e: unknown) => e)) as {
      data?: { error?: string; reason?: string };
    };
    expect(late.data?.error, JSON.stringify(late)).toBe("audit_unavailable");
    expect(late.data?.reason).toContain(`the store ${wal} was cut short or overwritten`);
    expect((await first.exited).code).toBe(2);
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
    expect(verify.code, verify.stderr).toBe(0);
  }, 90_000);
});
