// Whether a pid is portcullis's own process is read from /proc (src/identity/procPortcullis.ts):
// what runs (/proc/PID/exe), its arguments, its working directory. A process of the same user can
// close those entries to that user: executing a file the user may not read makes it undumpable,
// and /proc/PID/exe and /proc/PID/cwd then answer EACCES. Its command line stays readable and is
// its own to write: `exec -a node` makes argv[0] say node. The check fell back on argv[0] when
// /proc/PID/exe could not be read, so such a process whose arguments are a holder's
// (`node …/dist/cli/main.cjs __vault-holder`) was taken for the vault holder and `lock` SIGTERMed
// it. A /proc entry that cannot be read now reads as not portcullis (docs/security.md, "`lock` ends
// only portcullis's own holder").
//
// Real processes as a real unprivileged user (root ignores /proc's access checks, so the test runs
// where it can start `nobody`'s processes): bash copied execute-only (0711, root's), started as
// nobody under argv[0] `node` with this build's CLI and `__vault-holder` as its arguments, reading
// a stdin that never ends; `portcullis lock` run as nobody.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processStartTime } from "../../src/identity/procRead.js";
import { alive, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NOBODY, ROOT_ON_LINUX, unprivilegedUser } from "../helpers/otherUser.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A copy of bash that nobody may execute but not read. */
function executeOnlyBash(): string {
  const dir = tempDir("portcullis-exec-only-");
  cleanup.push(() => removeDir(dir));
  chmodSync(dir, 0o755);
  const bash = join(dir, "bash");
  copyFileSync("/bin/bash", bash);
  chmodSync(bash, 0o711);
  return bash;
}

/** What nobody reads of /proc/PID/exe: the link, or the error's code. */
function exeAsNobody(pid: number): string {
  const r = spawnSync(
    NODE,
    [
      "-e",
      `try { console.log(require("fs").readlinkSync("/proc/${pid}/exe")) } catch (e) { console.log(e.code) }`,
    ],
    { uid: NOBODY, gid: NOBODY, encoding: "utf8" },
  );
  return r.stdout.trim();
}

describe.runIf(ROOT_ON_LINUX)("a process whose /proc entries its user cannot read", () => {
  it("is not taken for the vault holder by its argv[0]: lock leaves it alone and says so", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const user = unprivilegedUser([stateDir]);
    expect(user, "nobody cannot run the built CLI").not.toBeNull();
    const bash = executeOnlyBash();
    const child: ChildProcess = spawn(bash, ["-s", CLI, "__vault-holder", "--state-dir", stateDir], {
      argv0: "node",
      ...user!.spawn,
      stdio: ["pipe", "ignore", "ignore"],
    });
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    cleanup.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    });
    const pid = child.pid!;
    await waitFor(
      () =>
        readFileSync(`/proc/${pid}/cmdline`, "utf8") ===
        `node\0-s\0${CLI}\0__vault-holder\0--state-dir\0${stateDir}\0`,
      10_000,
      "the decoy's command line",
    );
    // the premise: its command line says node running the CLI as a holder; its executable is closed
    expect(exeAsNobody(pid)).toBe("EACCES");
    const startTime = processStartTime(pid)!;
    const file = join(stateDir, `vault-holder-${pid}.pid`);
    writeFileSync(file, JSON.stringify({ pid, startTime }), { mode: 0o600 });
    chownSync(file, NOBODY, NOBODY);

    const lock = await runCli(["lock"], { stateDir, ...user!.spawn });
    expect(lock.code, lock.stderr).toBe(0);
    expect(child.signalCode, "the decoy was signalled").toBeNull();
    expect(alive(pid)).toBe(true);
    expect(lock.stdout).toBe("the vault was already locked\n");
    expect(lock.stderr).toBe(
      `portcullis lock: pid ${pid} is not a portcullis vault holder by its command line (the record naming it may have been written by another process): do not end that process for this; it was not signalled, and ${file}, which names it, was left for you to look at and remove\n`,
    );
  });
});
