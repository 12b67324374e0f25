// The state directory is its owner's alone, whatever the umask: `portcullis init` and a running
// gateway are started under umask 000 (every file the process makes without an explicit mode is
// then world-readable and writable), and the state directory, keyring.json, portcullis.db and its
// -wal and -shm files must still be 0700 / 0600. A test that made the directory itself, or ran
// under a strict umask, could not tell.
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { type RawPeer, rawPeer } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";

/** `sh -c 'umask 000; exec "$@"'`: the command, under the most permissive umask */
const UMASK_000 = ["-c", 'umask 000 && exec "$@"', "sh"];

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const mode = (path: string) => statSync(path).mode & 0o777;

describe("state files under umask 000", () => {
  it("init makes the state directory 0700 and keyring.json 0600; the store and its -wal/-shm are 0600", async () => {
    const parent = tempDir();
    cleanup.push(() => removeDir(parent));
    const stateDir = join(parent, "state"); // made by init, not by the test
    const init = spawnSync("/bin/sh", [...UMASK_000, NODE, CLI, "init", "--state-dir", stateDir], {
      env: { ...process.env, ...passphraseEnv() },
      encoding: "utf8",
    });
    expect(init.status, init.stderr).toBe(0);
    // the umask took: a file the shell makes without a mode is world-writable
    const probe = join(parent, "probe");
    spawnSync("/bin/sh", [...UMASK_000, "/bin/sh", "-c", `: > "${probe}"`]);
    expect(mode(probe)).toBe(0o666);

    expect(mode(stateDir)).toBe(0o700);
    expect(mode(join(stateDir, "keyring.json"))).toBe(0o600);

    const peer: RawPeer = rawPeer("/bin/sh", [
      ...UMASK_000,
      NODE,
      CLI,
      "run",
      "--state-dir",
      stateDir,
      "--label",
      "modes",
      "--approval",
      "none",
      "--",
      NODE,
      FIXTURES.echo,
    ]);
    cleanup.push(() => peer.close());
    await peer.initialize();
    const done = await peer.request("tools/call", { name: "echo", arguments: { message: "hi" } });
    expect(done.error).toBeUndefined();
    // while the gateway runs, SQLite keeps its write-ahead log and shared-memory index beside the store
    const db = join(stateDir, "portcullis.db");
    await waitFor(
      () => existsSync(`${db}-wal`) && existsSync(`${db}-shm`),
      10_000,
      "the -wal and -shm files",
    );
    expect(mode(db)).toBe(0o600);
    expect(mode(`${db}-wal`)).toBe(0o600);
    expect(mode(`${db}-shm`)).toBe(0o600);
    expect(mode(stateDir)).toBe(0o700);
  });
});
