// `audit verify` of an empty log beside a keyring: init writes record 1 (the approver key's pin)
// into the store it sets up, so an empty log there is a store deleted or replaced (or an init
// interrupted before its pin). The chain alone cannot tell which, and verify still passes it, but
// it says so (text, and `emptyBesideKeyring` in --json) rather than "ok: the log is empty" alone;
// with a checkpoint taken earlier, the deletion is a failure; `audit checkpoint` of such a log says
// the same on stderr. Real CLI processes.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) removeDir(d);
  dirs = [];
});

describe("audit verify: an empty log beside a keyring", () => {
  it("is said to be a deleted store or an interrupted init; a checkpoint taken before makes it a failure", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    const checkpoint = await runCli(["audit", "checkpoint"], { stateDir });
    expect(checkpoint.code, checkpoint.stderr).toBe(0);
    const cpFile = join(stateDir, "..", `${stateDir.split("/").pop()}.checkpoint.json`);
    writeFileSync(cpFile, checkpoint.stdout);
    dirs.push(cpFile);
    const before = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(JSON.parse(before.stdout).emptyBesideKeyring).toBeUndefined();

    for (const f of ["portcullis.db", "portcullis.db-wal", "portcullis.db-shm"])
      rmSync(join(stateDir, f), { force: true });
    const text = await runCli(["audit", "verify"], { stateDir });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^audit chain ok: the log is empty\nbut a keyring is here, .*store was deleted or replaced/,
    );
    const json = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, records: 0, emptyBesideKeyring: true });
    const against = await runCli(["audit", "verify", "--checkpoint", cpFile], { stateDir });
    expect(against.code).toBe(1);
    // the commands that only read the log create no store where there is none (a new one would
    // hide the deletion from the next look, and verify would have written)
    const exported = await runCli(["audit", "export"], { stateDir });
    expect([exported.code, exported.stdout]).toEqual([0, ""]);
    const again = await runCli(["audit", "checkpoint", "--json"], { stateDir });
    expect(again.code, again.stderr).toBe(0);
    // the checkpoint of the empty log is made (an init interrupted before its pin leaves one),
    // and says on stderr what such a log beside a keyring may be, as verify does
    expect(JSON.parse(again.stdout)).toMatchObject({ seq: 0, hash: "0".repeat(64) });
    expect(again.stderr).toMatch(
      /^portcullis audit checkpoint: note: this is a checkpoint of an empty log beside a keyring; .*its store was deleted or replaced/,
    );
    expect(existsSync(join(stateDir, "portcullis.db"))).toBe(false);
  });
});
