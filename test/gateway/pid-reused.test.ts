// A paused gateway (a crash loop under the artifact watcher) waits, for as long as the developer
// takes to fix the server, with no server running. The crashed server's pid is free meanwhile,
// and another program can get it as the leader of a process group of its own (a terminal's job,
// a detached daemon). The gateway's end must not signal that group: it is not the server's.
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { alive, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { rawGateway } from "../helpers/raw.js";

const NS_LAST_PID = "/proc/sys/kernel/ns_last_pid";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Whether this process can choose the next pid (root in its PID namespace, on Linux). */
function canChoosePids(): boolean {
  if (process.platform !== "linux") return false;
  try {
    accessSync(NS_LAST_PID, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** A process that leads a process group of its own, started under `pid` (null: not obtained). */
function groupLeaderUnder(pid: number): number | null {
  // Another process may take the pid between the write and the fork: try again. 50 tries were
  // not enough in a clean-clone run whose other test files forked all the while.
  for (let attempt = 0; attempt < 1000; attempt++) {
    writeFileSync(NS_LAST_PID, String(pid - 1));
    const other = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
    if (other.pid === pid) {
      cleanup.push(() => {
        if (alive(pid)) process.kill(-pid, "SIGKILL");
      });
      return pid;
    }
    if (other.pid !== undefined) process.kill(other.pid, "SIGKILL");
  }
  return null;
}

it.skipIf(!canChoosePids())(
  "the gateway's end signals no process group that took a crashed server's pid while it was paused",
  async () => {
    const dir = tempDir("pc-pid-reused-");
    cleanup.push(() => removeDir(dir));
    const starts = join(dir, "starts");
    writeFileSync(join(dir, "server.sh"), `echo $$ >> "${starts}"\nexit 1\n`);
    const gw = rawGateway({
      args: ["--label", "reused", "--approval", "none", "--on-change", "restart", "--", "sh", "server.sh"],
      cwd: dir,
      env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
    });
    cleanup.push(() => gw.close());
    await waitFor(() => /supervision paused/.test(gw.stderr()), 30_000, "the crash loop to pause");
    const pids = readFileSync(starts, "utf8").trim().split("\n").map(Number);
    const last = pids[pids.length - 1]!;
    await waitFor(() => !existsSync(`/proc/${last}`), 10_000, "the last server to be reaped");
    const other = groupLeaderUnder(last);
    expect(other, "a process group under the crashed server's pid").toBe(last);

    gw.closeStdin();
    expect((await gw.exited).code).toBe(0);
    expect(alive(last)).toBe(true);
  },
);
