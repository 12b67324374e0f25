// A dead generation's process group is SIGKILLed after the grace period (ProcessGroups.end) when
// something is left in it. Once the server was reaped with nothing left in its group, its number
// is free: a process started within the grace can take it, lead a group of its own, fork a member
// and exit. No process holds the number then, which the start-time check read as "the leader was
// reaped, what is left is ours", and the SIGKILL reached the stranger's member. What carried the
// number at the server's reap is now read then (groupSignal.ts), and the group is signalled only
// while one of those processes still carries it. The leftover of our own that ignores SIGTERM,
// its leader gone, is still SIGKILLed. Real processes; the stranger is started under the freed
// pid by choosing the next pid (root on Linux: /proc/sys/kernel/ns_last_pid).
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { afterEach, expect, it } from "vitest";
import { ProcessGroups } from "../../src/supervisor/processGroups.js";
import { alive, removeDir, tempDir } from "../helpers/files.js";
import { canChoosePids, childUnder, exited, recorded } from "../helpers/pids.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

/** Kills group `pgid` at the test's end, if anything is left in it. */
function killGroupAtEnd(pgid: number): void {
  cleanup.push(() => {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // nothing left
    }
  });
}

/**
 * A shell script run in the background by its group's leader, which exits at once: the script is
 * left in the group, says "ready PID" once its trap is set, and runs `sleep`s until a signal.
 */
function leftoverScript(trap: string): string {
  const dir = tempDir("pc-group-leftovers-");
  cleanup.push(() => removeDir(dir));
  const file = join(dir, "leftover.sh");
  writeFileSync(file, `${trap}\necho "ready $$"\nwhile :; do sleep 1000 >/dev/null & wait $!; done\n`);
  return file;
}

/** Everything `stream` carries until its end, and its first "ready PID" line's pid. */
function output(stream: Readable): { ready: Promise<number>; all: Promise<string> } {
  let text = "";
  let said!: (pid: number) => void;
  const ready = new Promise<number>((resolve) => {
    said = resolve;
  });
  const all = new Promise<string>((resolve) => {
    stream.setEncoding("utf8");
    stream.on("data", (d: string) => {
      text += d;
      const m = /ready (\d+)\n/.exec(text);
      if (m) said(Number(m[1]));
    });
    stream.on("end", () => resolve(text));
  });
  return { ready, all };
}

it.skipIf(!canChoosePids())(
  "a dead group's SIGKILL spares a group another process formed under its number and left",
  async () => {
    // A grace no test outlives: the SIGKILL is sent by killAll (a hurried shutdown), which
    // cancels the grace's timer and sends it to every group not yet sent it through the same
    // check (ProcessGroups.signal). Waiting out a real grace instead made the case depend on the
    // stranger being set up within it (up to 1,000 spawns to reach the pid on a loaded machine).
    const groups = new ProcessGroups(600_000);
    const server = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
    const pid = server.pid!;
    groups.launched(recorded(server));
    killGroupAtEnd(pid);
    server.kill("SIGKILL");
    await exited(server); // reaped with nothing left in its group: its number is free
    groups.end(pid); // as the supervisor does at the exit: SIGKILL after the grace, if anything is left
    // A stranger takes the number, leads a group (and session) of its own, leaves a member in it
    // that says HUP when it gets SIGHUP, and exits.
    const member = leftoverScript(`trap 'echo HUP; exit 0' HUP`);
    const stranger = childUnder(pid, "sh", ["-c", 'sh "$0" &', member], ["ignore", "pipe", "ignore"]);
    if (stranger === null) return; // the pid could not be had: nothing to judge
    const said = output(stranger.stdout!);
    const memberPid = await said.ready;
    await exited(stranger); // reaped: no process holds the number, a member of the group is left
    groups.killAll();
    // The first fatal signal decides: a member SIGKILLed before cannot say HUP.
    try {
      process.kill(memberPid, "SIGHUP");
    } catch {
      // gone: killed
    }
    expect(await said.all).toContain("HUP");
  },
);

it("a leftover of our own that ignores SIGTERM is SIGKILLed after the grace, its leader gone", async () => {
  const groups = new ProcessGroups(1_500);
  // the server leaves the script in its group and exits: no process holds the number
  const member = leftoverScript(`trap '' TERM`);
  const server = spawn("sh", ["-c", 'sh "$0" &', member], {
    detached: true,
    stdio: ["ignore", "pipe", "ignore"],
  });
  groups.launched(recorded(server));
  killGroupAtEnd(server.pid!);
  const said = output(server.stdout!);
  await said.ready;
  await exited(server);
  groups.end(server.pid!);
  // its output ends once it is dead: SIGTERM ignored, SIGKILL after the grace
  await said.all;
  expect(alive(server.pid!)).toBe(false);
});
