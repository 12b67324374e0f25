// A `run --listen` gateway SIGKILLed leaves its address file (`<stateDir>/listen/<label>.<pid>.json`,
// src/transport/httpInfo.ts) behind: it is removed only at a clean end. `portcullis status` must
// not show a dead gateway as running: its gateways rows are judged by pid *and start time*
// (src/identity/procLiveness.ts), so a pid taken since by another process is not the gateway.
// The front's address file is judged by its pid alone: once any other process holds that pid (a
// pid is reused within seconds on a busy machine, and a daemon keeps it for good), `status` says
// the dead gateway is "listening on http://…" and prints the bearer token to give a host, for as
// long as that process lives. Here the pid is handed to a `sleep` on purpose (root on Linux can
// choose the next pid: /proc/sys/kernel/ns_last_pid, as test/gateway/pid-reused.test.ts does).
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { alive } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { startListener } from "../http/listen.js";

const NS_LAST_PID = "/proc/sys/kernel/ns_last_pid";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function canChoosePids(): boolean {
  if (process.platform !== "linux") return false;
  try {
    accessSync(NS_LAST_PID, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** A long-lived unrelated process started under `pid` (null: not obtained). */
function processUnder(pid: number): number | null {
  for (let attempt = 0; attempt < 1000; attempt++) {
    writeFileSync(NS_LAST_PID, String(pid - 1));
    const other = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
    if (other.pid === pid) {
      cleanup.push(() => {
        if (alive(pid)) process.kill(pid, "SIGKILL");
      });
      return pid;
    }
    if (other.pid !== undefined) process.kill(other.pid, "SIGKILL");
  }
  return null;
}

it.skipIf(!canChoosePids())(
  "a SIGKILLed run --listen is not shown listening by `status` once its pid belongs to another process",
  async () => {
    const front = await startListener([NODE, FIXTURES.echo], { label: "front" });
    cleanup.push(() => front.close());
    const pid = front.proc.pid!;
    const before = JSON.parse((await runCli(["status", "--json", "--state-dir", front.stateDir])).stdout);
    expect(before.listening.map((l: { pid: number }) => l.pid)).toEqual([pid]);

    front.proc.kill("SIGKILL");
    await new Promise((resolve) =>
      front.proc.exitCode !== null || front.proc.signalCode !== null
        ? resolve(null)
        : front.proc.once("exit", resolve),
    );
    // the address file is still there: a SIGKILL removes nothing
    expect(readdirSync(join(front.stateDir, "listen")).filter((n) => n.endsWith(".json"))).toEqual([
      `front.${pid}.json`,
    ]);
    // right after the kill, status is right
    const dead = JSON.parse((await runCli(["status", "--json", "--state-dir", front.stateDir])).stdout);
    expect(dead.listening).toEqual([]);

    // the pid is taken by an unrelated process
    expect(processUnder(pid), "could not get the dead gateway's pid for another process").toBe(pid);
    const status = await runCli(["status", "--json", "--state-dir", front.stateDir]);
    expect(status.code).toBe(0);
    const shown = JSON.parse(status.stdout) as { gateways: { pid: number }[]; listening: { pid: number }[] };
    // the gateways rows are judged by pid and start time: the dead gateway is not listed
    expect(shown.gateways.filter((g) => g.pid === pid)).toEqual([]);
    // nor may its front be
    expect(shown.listening).toEqual([]);
    const text = await runCli(["status", "--state-dir", front.stateDir]);
    expect(text.stdout).not.toMatch(/listening on/);
    expect(existsSync(join(front.stateDir, "listen"))).toBe(true);
  },
  20_000,
);
