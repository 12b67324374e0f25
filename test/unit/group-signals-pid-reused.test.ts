// Signals the supervisor sends a launched server's process group after the server has exited and
// been reaped: its pid (the group's number) is free then, and a process started meanwhile may be
// given it and lead a group of its own. Each such signal is checked against the server's start
// time as read at its spawn (src/supervisor/groupSignal.ts). Unchecked, stopChild's last SIGKILL
// ("anything left in the group"), discard's SIGKILL and the early start's guard killed that
// group; and a server that exited before its launch was wired had the start time under its pid
// read again after the exit, so the SIGTERM its exit sends its group (ProcessGroups.end) passed
// the check and reached the group that took the pid. Real processes; the unrelated group is started under the freed pid by choosing
// the next pid (root on Linux: /proc/sys/kernel/ns_last_pid). Which signal ended it tells whose
// it was: the first fatal signal sent decides a process's end, and the test sends SIGHUP last.
import type { ChildProcess } from "node:child_process";
import { expect, it } from "vitest";
import { EarlyStart } from "../../src/supervisor/earlyStart.js";
import { discard, type SpawnSpec, spawnServer } from "../../src/supervisor/spawn.js";
import { stopChild } from "../../src/supervisor/workerPipes.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { canChoosePids, endedBy, exited, sleepingChildUnder } from "../helpers/pids.js";
import { deferredCleanup, supervisorIn } from "../helpers/supervisor.js";

const defer = deferredCleanup();

const PATH = process.env.PATH ?? "/usr/bin:/bin";

/** Starts an unrelated group under `pid` (null: another process took the pid first). */
function otherGroupUnder(pid: number): ChildProcess | null {
  return sleepingChildUnder(pid, (end) => defer(end));
}

it.skipIf(!canChoosePids())(
  "stopChild's last SIGKILL spares the group that took the server's pid after its exit",
  async () => {
    // cat exits as its stdin closes: the first step of stopChild ends it
    const started = spawnServer({ command: "cat", args: [], cwd: "/", env: { PATH } });
    const child = await started.spawned;
    const pid = child.pid!;
    let other: ChildProcess | null = null;
    // Listening before stopChild does, so this runs first: the server is reaped (its group empty,
    // its pid free) and the pid is taken before stopChild goes on to its last SIGKILL.
    child.once("exit", () => {
      other = otherGroupUnder(pid);
    });
    await stopChild(child, 30_000);
    if (other === null) return; // the pid could not be had: nothing to judge
    expect(await endedBy(other)).toBe("SIGHUP");
  },
);

it.skipIf(!canChoosePids())(
  "discarding a launch whose server already exited spares the group that took its pid",
  async () => {
    const started = spawnServer({ command: "true", args: [], cwd: "/", env: { PATH } });
    const child = await started.spawned;
    await exited(child); // reaped: its pid is free
    const other = otherGroupUnder(child.pid!);
    if (other === null) return;
    await discard(started);
    expect(await endedBy(other)).toBe("SIGHUP");
  },
);

it.skipIf(!canChoosePids())(
  "a server that exited before its launch took it: the SIGTERM its exit sends its group spares the group that took its pid",
  async () => {
    const dir = tempDir("pc-group-signals-");
    defer(() => removeDir(dir));
    const spec: SpawnSpec = { command: "true", args: [], cwd: dir, env: { PATH } };
    // spawned early (as src/cli/run.ts does) and gone before the first launch takes it
    const early = new EarlyStart(spec, []);
    defer(() => early.abandon());
    const child = await early.started.spawned;
    await exited(child);
    const other = otherGroupUnder(child.pid!);
    if (other === null) return;
    const { sup } = supervisorIn(dir, { serverLabel: "early-gone", command: "true", args: [] }, { early });
    defer(() => sup.shutdown());
    // its exit is seen once the launch wires it: its group is ended (SIGTERM) before `down`
    const down = new Promise((resolve) => sup.once("down", resolve));
    await sup.start();
    await down;
    expect(await endedBy(other)).toBe("SIGHUP");
  },
);

it.skipIf(!canChoosePids())(
  "the early start's guard, signalled after its server exited, spares the group that took its pid",
  async () => {
    const early = new EarlyStart({ command: "true", args: [], cwd: "/", env: { PATH } }, ["SIGUSR2"]);
    defer(() => early.abandon());
    const child = await early.started.spawned;
    await exited(child);
    const other = otherGroupUnder(child.pid!);
    if (other === null) return;
    // Listening after the guard: the guard's handler runs first, and then raises the signal again
    // for its default action, which this listener turns into nothing. Both are waited for: the
    // second, coming once this listener is gone, would end the test's process.
    let seen!: () => void;
    const signalled = new Promise<void>((resolve) => {
      seen = resolve;
    });
    let times = 0;
    const listener = () => {
      if (++times === 2) seen();
    };
    process.on("SIGUSR2", listener);
    defer(() => void process.off("SIGUSR2", listener));
    process.kill(process.pid, "SIGUSR2");
    await signalled;
    expect(await endedBy(other)).toBe("SIGHUP");
  },
);
