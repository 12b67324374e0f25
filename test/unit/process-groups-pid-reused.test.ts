// A dead generation's process group is SIGKILLed after a grace period (ProcessGroups.end). Its
// number is free once the group is empty, and the next server launched can be given it within
// the grace on a busy machine (a CI run's pids wrap, and tests here choose pids): the map of
// groups then holds the new launch's start time under that number, and the old group's SIGKILL
// passed the start-time check and killed the new server. In a CI run, a node --watch server
// restarted for a lost worker came up under the pid of the process it replaced and was killed
// 200 ms later ("killed by SIGKILL", counted as a crash: test/gateway/worker-lost-loop failed).
// Real processes, a pid chosen for the second one (root on Linux: /proc/sys/kernel/ns_last_pid).
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, expect, it } from "vitest";
import { ProcessGroups } from "../../src/supervisor/processGroups.js";
import { alive } from "../helpers/files.js";
import { canChoosePids, exited, recorded, sleepingChildUnder } from "../helpers/pids.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

function detached(command: string, args: string[]): ChildProcess {
  const child = spawn(command, args, { detached: true, stdio: "ignore" });
  cleanup.push(() => {
    if (child.pid !== undefined && alive(child.pid)) process.kill(-child.pid, "SIGKILL");
  });
  return child;
}

it.skipIf(!canChoosePids())(
  "a dead group's SIGKILL after the grace spares the next launch given its number",
  async () => {
    // a grace long enough for the next launch to be made within it, as in the CI run
    const groups = new ProcessGroups(5_000);
    // another group, ended at the same moment as the old one, whose member ignores SIGTERM: once
    // it is gone the grace is over and the SIGKILLs were sent (timers of one delay fire in order)
    const stubborn = spawn(
      process.execPath,
      ["-e", "process.on('SIGTERM',()=>{});setInterval(()=>{},1e6);process.stdout.write('ready')"],
      { detached: true, stdio: ["ignore", "pipe", "ignore"] },
    );
    const stubbornLeader = recorded(stubborn);
    cleanup.push(() => {
      if (stubborn.pid !== undefined && alive(stubborn.pid)) process.kill(-stubborn.pid, "SIGKILL");
    });
    // its handler in place before any SIGTERM comes
    await new Promise((resolve) => stubborn.stdout?.once("data", resolve));
    groups.launched(stubbornLeader);
    const old = detached("sleep", ["1000"]);
    const pid = old.pid as number;
    groups.launched(recorded(old)); // read at the spawn, as the supervisor does
    old.kill("SIGKILL");
    await exited(old); // reaped: its number is free
    groups.end(pid); // the old generation's end: SIGKILL to what is left of its group, after the grace
    groups.end(stubborn.pid as number);
    // the next launch, under the freed number
    const next = sleepingChildUnder(pid, (end) => cleanup.push(end));
    if (next === null) return; // the pid could not be had (another process took it first): nothing to judge
    groups.launched(recorded(next));
    expect(alive(stubborn.pid as number), "the next launch came within the grace").toBe(true);
    await exited(stubborn);
    expect(alive(pid)).toBe(true);
  },
);
