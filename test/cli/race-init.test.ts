// `portcullis init` twice at once on a state directory that does not exist yet.
//
// init notes the directory it is about to make (`missingFrom`) before it asks for the passphrase,
// and on failure "takes back" that directory: it deletes portcullis.db*, keyring.json and rmdirs
// it. Two inits that both found the directory missing both believe they made it. The one that
// loses (initKeyring refuses: "a keyring already exists") then deletes the keyring and the store
// the winner made and reported ("Keyring created", exit 0), and the directory with them: the
// state directory the human was just told is set up is gone. (Or, when the loser's take-back
// lands before the winner pinned its key: the winner dies with "internal error: the keyring
// disappeared", exit 70, and nothing is left.) In a plain loop of two concurrent inits this
// happened in 3 of 10 runs. Now the directory is an init's own only if its one mkdir of it won
// (src/cli/init.ts, madeHere), and nothing is taken back from a directory holding another init's
// keyring.
//
// Made deterministic without timing guesses: each init reads its passphrase from a FIFO
// (PORTCULLIS_PASSPHRASE_FILE may be a pipe), so both wait there, after deciding the directory is
// theirs; the test sees each reader arrive (a non-blocking open for writing succeeds only once
// the FIFO has a reader), then feeds the first, waits for its success, then feeds the second.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { closeSync, constants, existsSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** An `init` of `stateDir` whose passphrase comes through the FIFO `fifo`. */
function initThrough(stateDir: string, fifo: string) {
  const child: ChildProcess = spawn(NODE, [CLI, "init", "--state-dir", stateDir], {
    env: hostEnv({ PORTCULLIS_PASSPHRASE_FILE: fifo, PORTCULLIS_INSECURE_TEST_KDF: "1" }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
  });
  child.stderr!.setEncoding("utf8").on("data", (c: string) => {
    stderr += c;
  });
  // its output read to the end, not only its exit: what it said is read once it exited
  const exited = exitWithOutput(child).then(({ code }) => code);
  cleanup.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { exited, out: () => ({ stdout, stderr }) };
}

/** Resolves once `fifo` has a reader (a writer's non-blocking open fails with ENXIO until then); returns the fd. */
async function writerOnceRead(fifo: string): Promise<number> {
  let fd = -1;
  await waitFor(
    () => {
      try {
        fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
        return true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENXIO") throw e;
        return false;
      }
    },
    20_000,
    `a reader on ${fifo}`,
  );
  return fd;
}

function feed(fd: number): void {
  writeSync(fd, `${TEST_PASSPHRASE}\n`);
  closeSync(fd);
}

describe("portcullis init twice at once on a new directory", () => {
  it("the init that loses leaves the winner's keyring, store and directory alone", async () => {
    const parent = tempDir("portcullis-init-race-");
    cleanup.push(() => removeDir(parent));
    const stateDir = join(parent, "state");
    const fifoA = join(parent, "pass-a");
    const fifoB = join(parent, "pass-b");
    execFileSync("mkfifo", ["-m", "600", fifoA, fifoB]);

    const a = initThrough(stateDir, fifoA);
    const b = initThrough(stateDir, fifoB);
    // both wait for their passphrase: each has checked that the directory is missing and no keyring is there
    const fdA = await writerOnceRead(fifoA);
    const fdB = await writerOnceRead(fifoB);
    expect(existsSync(stateDir)).toBe(false);

    feed(fdA);
    expect(await a.exited, a.out().stderr).toBe(0);
    expect(a.out().stdout).toContain("Keyring created");
    expect(existsSync(join(stateDir, "keyring.json"))).toBe(true);

    feed(fdB);
    expect(await b.exited).toBe(2);
    expect(b.out().stderr).toMatch(/a keyring already exists/);

    // what the first init said it created is still there, and works
    expect(existsSync(join(stateDir, "keyring.json")), "keyring.json of the init that succeeded").toBe(true);
    expect(existsSync(join(stateDir, "portcullis.db")), "portcullis.db of the init that succeeded").toBe(
      true,
    );
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
    expect(verify.code, verify.stderr).toBe(0);
  });
});
