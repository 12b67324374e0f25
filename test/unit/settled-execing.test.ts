// A process of the tree caught in the middle of its execve when an epoch settles (a helper the
// server just started): its image is taken at the first look that sees it whole, not compared
// with the half-loaded program it showed then (which would read as a replacement by execve that
// never happened). Real processes; the settled entry is made as settledFrom makes one for a
// process whose stat line said "execing".
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { readStat } from "../../src/identity/procRead.js";
import {
  ReplacementDetector,
  type SettledProcess,
  type WatchedGeneration,
} from "../../src/supervisor/replacement.js";
import { waitFor } from "../helpers/files.js";

const ends: (() => void)[] = [];
afterEach(() => {
  for (const end of ends.splice(0)) end();
});

async function sleeper(): Promise<number> {
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  ends.push(() => child.kill("SIGKILL"));
  const pid = child.pid!;
  await waitFor(() => readStat(pid)?.image, 5_000, "sleep to run"); // whole: its text loaded
  return pid;
}

function generation(pid: number, entry: Partial<SettledProcess>): WatchedGeneration {
  const st = readStat(pid)!;
  const settled: SettledProcess = {
    pid,
    ppid: st.ppid,
    startTime: st.startTime,
    exe: null,
    image: null,
    exec: null,
    pending: false,
    answers: true,
    ...entry,
  };
  // another process is the launched one: the sleeper is a process of its tree
  return { child: { pid: process.pid }, settled: [settled], departed: [], channel: null };
}

describe.runIf(process.platform === "linux")("a settled process that was in the middle of its execve", () => {
  it("is settled with the image it shows once whole, and no replacement is seen", async () => {
    const pid = await sleeper();
    const detector = new ReplacementDetector();
    ends.push(() => detector.close());
    const gen = generation(pid, { pending: true });
    expect(detector.look(gen, true)).toBeNull();
    const [p] = gen.settled!;
    expect(p!.pending).toBe(false);
    expect(p!.image).toBe(readStat(pid)!.image);
    expect(p!.exec).not.toBeNull();
    // and from then on compared as any settled process is
    await new Promise((r) => setImmediate(r)); // the detector looks once per event-loop turn
    expect(detector.look(gen, true)).toBeNull();
  });

  it("recorded without that (its image as the half-loaded program showed it): a replacement by execve that never happened", async () => {
    const pid = await sleeper();
    const detector = new ReplacementDetector();
    ends.push(() => detector.close());
    expect(detector.look(generation(pid, {}), false)).toBe(`process ${pid} now runs other code (execve)`);
  });
});
