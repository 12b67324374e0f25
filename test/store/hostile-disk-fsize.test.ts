// A file size limit (RLIMIT_FSIZE, `ulimit -f`) that the store's files reach: set by the shell that
// starts the process (`sh -c 'ulimit -f BLOCKS && exec …'`, no privilege needed; POSIX counts in
// 512-byte blocks). A write past it fails with EFBIG, and the kernel sends SIGXFSZ, which ends a
// process that does not ignore it. What must hold: the gateway is not ended by it; a tools/call
// that cannot be recorded is refused (never forwarded) with a reason naming the store and the
// limit; commands say the limit is what stops them (not "input/output error … restore from a
// backup", not a deleted -wal) and exit 2; `vault set` keeps the old value; nothing is damaged.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway, rawPeer } from "../helpers/raw.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** `command args…` under a file size limit of `blocks` 512-byte blocks, through sh. */
function limited(blocks: number, command: string, args: string[]): [string, string[]] {
  return ["sh", ["-c", 'ulimit -f "$0" && exec "$@"', String(blocks), command, ...args]];
}

const TOOLS = '[{"name":"say","inputSchema":{"type":"object"}}]';

describe("a gateway whose store reaches its file size limit", () => {
  it("is not ended by SIGXFSZ; the call that cannot be recorded is refused, naming the limit; a gateway without the limit works on the same store", async () => {
    const stateDir = newStateDir();
    const db = join(stateDir, "portcullis.db");
    // the -wal starts empty and may grow to the database's size and 64 KiB: a few calls fill it
    const blocks = Math.ceil((statSync(db).size + 65536) / 512);
    const log = join(tempDir(), "raw.log");
    const received = () =>
      existsSync(log)
        ? readFileSync(log, "utf8")
            .split("\n")
            .filter((l) => l.includes("tools/call")).length
        : 0;
    const [sh, args] = limited(blocks, NODE, [
      CLI,
      "run",
      "--state-dir",
      stateDir,
      "--label",
      "fsize",
      "--approval",
      "none",
      "--",
      NODE,
      FIXTURES.rawlines,
    ]);
    const gw = rawPeer(sh, args, { FIXTURE_RAW_LOG: log, FIXTURE_RAW_TOOLS: TOOLS });
    cleanup.push(() => gw.close());
    await gw.initialize();
    let refused: Awaited<ReturnType<typeof gw.request>> | undefined;
    let forwarded = 0;
    for (let i = 0; i < 500 && !refused; i++) {
      const answer = await gw.request("tools/call", { name: "say", arguments: { n: i } });
      if (answer.error) refused = answer;
      else forwarded++;
    }
    expect(refused?.error?.data).toMatchObject({ error: "audit_unavailable" });
    const reason = String((refused?.error?.data as { reason?: unknown } | undefined)?.reason);
    // was SQLite's "disk I/O error"
    expect(reason).toContain(`the store ${db} cannot be written`);
    expect(reason).toContain("file size limit");
    expect(received()).toBe(forwarded); // the refused call never reached the server
    expect((await gw.request("ping")).result).toEqual({});
    gw.closeStdin();
    expect(await gw.exited).toEqual({ code: 0, signal: null }); // SIGXFSZ did not end it
    expect(gw.stderr()).not.toMatch(/ {4}at |SqliteError/);

    const verify = await runCli(["audit", "verify"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
    const next = rawGateway({
      args: ["--label", "fsize", "--approval", "none", "--", NODE, FIXTURES.rawlines],
      env: { FIXTURE_RAW_LOG: log, FIXTURE_RAW_TOOLS: TOOLS },
      stateDir,
    });
    cleanup.push(() => next.close());
    await next.initialize();
    expect((await next.request("tools/call", { name: "say", arguments: { n: "after" } })).result).toEqual({});
    next.closeStdin();
    expect((await next.exited).code).toBe(0);
    expect((await runCli(["audit", "verify"], { stateDir })).code).toBe(0);
  });
});

describe("commands whose store reaches their file size limit", () => {
  it("say the limit stops them and exit 2, keeping the old secret (a limit below the -shm file's 32 KiB, and one the -wal reaches)", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    const db = join(stateDir, "portcullis.db");
    const set = (value: string, blocks?: number) => {
      const args = [CLI, "vault", "set", "tok", "--from-stdin", "--deliver", "env"];
      const [command, argv] = blocks ? limited(blocks, NODE, args) : [NODE, args];
      return runRaw(command, argv, { ...env, PORTCULLIS_HOME: stateDir }, `${value}\n`);
    };
    expect((await set("old-value-1234567")).code).toBe(0);
    for (const blocks of [8, 80]) {
      const r = await set("n".repeat(60_000), blocks);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(`^portcullis vault set: the store ${db} cannot be written: .*file size limit`),
      );
      // was "cannot be read or written (input/output error). To fix it: … restore … from a backup",
      // or (under 32 KiB) a -wal "deleted while a process has the store open"
      expect(r.stderr).not.toMatch(/backup|-wal|input\/output| {4}at /);
      expect(r.stderr.split("\n")).toHaveLength(2); // one sentence, one line
    }
    const list = await runCli(["vault", "list", "--json"], { stateDir, env });
    expect(list.code, list.stderr).toBe(0);
    const secrets = (JSON.parse(list.stdout) as { secrets: { name: string; bytes: number }[] }).secrets;
    expect(secrets).toEqual([expect.objectContaining({ name: "tok", bytes: "old-value-1234567".length })]);
    expect((await runCli(["audit", "verify"], { stateDir })).code).toBe(0);
  });
});

/** A command to completion, its output kept (runCli runs the CLI only under node itself). */
function runRaw(
  command: string,
  args: string[],
  env: Record<string, string>,
  input: string,
): Promise<{ code: number | null; stderr: string }> {
  const peer = rawPeer(command, args, env);
  cleanup.push(() => peer.close());
  peer.send(input);
  peer.closeStdin();
  return peer.exited.then((e) => ({ code: e.code, stderr: peer.stderr() }));
}
