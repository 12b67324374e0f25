// The drill's default rebuild (restartServer, step 4) signals the process group of the server its
// gateway's record names: SIGTERM, and SIGKILL when no new epoch came within the grace. It checked
// only that the pid's holder was a child of the drill's gateway, at each signal: once the server
// exited and the gateway reaped it, its pid could be given to another child of that gateway (its
// next server, a process group of its own), which then passed the check and was signalled. The
// signal now goes through the supervisor's check (src/supervisor/groupSignal.ts) against the
// start time seen when step 1 read the record. Real processes: this test process plays the drill's
// gateway, whose children are the server and the process that takes the freed pid (chosen as the
// next pid: root on Linux, /proc/sys/kernel/ns_last_pid). Which signal ended that process tells
// whose it was: the first fatal signal sent decides a process's end, and the test sends SIGHUP last.
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, expect, it } from "vitest";
import { seenServer, signalServerGroup } from "../../src/onboard/drillRecord.js";
import { alive } from "../helpers/files.js";
import { canChoosePids, endedBy, exited, sleepingChildUnder } from "../helpers/pids.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

/** A server as the drill's gateway starts one: its child, leading a process group of its own. */
function server(): ChildProcess {
  const child = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
  cleanup.push(() => {
    if (alive(child.pid!)) process.kill(-child.pid!, "SIGKILL");
  });
  return child;
}

it.skipIf(!canChoosePids())(
  "the restart's signal spares the gateway's other child that took the server's pid after its exit",
  async () => {
    const s = server();
    const seen = seenServer({ processId: s.pid! }); // step 1
    s.kill("SIGKILL");
    await exited(s); // reaped by its gateway: its pid is free
    const other = sleepingChildUnder(s.pid!, (end) => cleanup.push(end));
    if (other === null) return; // the pid could not be had: nothing to judge
    expect(signalServerGroup(seen, process.pid, "SIGTERM")).toBe("gone");
    expect(await endedBy(other)).toBe("SIGHUP");
  },
);

it("the restart's signal reaches the server seen at step 1", async () => {
  const s = server();
  const seen = seenServer({ processId: s.pid! });
  expect(signalServerGroup(seen, process.pid, "SIGTERM")).toBe("sent");
  expect(await endedBy(s)).toBe("SIGTERM");
});

it("a record naming a process the drill's gateway did not start is refused, nothing sent", async () => {
  const s = server();
  const seen = seenServer({ processId: s.pid! });
  // its parent is this process, not the gateway named
  expect(() => signalServerGroup(seen, process.ppid, "SIGTERM")).toThrow(
    `the server pid ${s.pid} in the drill's store (gateways.record_json) is not a process the drill's gateway (pid ${process.ppid}) started: something rewrote the record, so the drill sends it no signal`,
  );
  expect(await endedBy(s)).toBe("SIGHUP");
});
