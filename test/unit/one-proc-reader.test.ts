// One module reads processes (src/identity/proc.ts and the identity/proc*.ts files behind it),
// with one start-time format that every user compares: the supervisor's replacement check, the approval chain, gateway liveness.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import {
  processStartTime as chainStartTime,
  describeProcess,
  processChain,
} from "../../src/approval/chain.js";
import { listDescendants, processStartTime } from "../../src/identity/index.js";
import { describeOsProcess } from "../../src/identity/proc.js";
import { dead, parseProcStat } from "../../src/identity/procRead.js";
import { REPO } from "../helpers/paths.js";

const SRC = join(REPO, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

/** Code (comments stripped) that opens a /proc path or runs ps. */
const READS_PROCESSES = /["'`]\/proc\b|["'`](\/bin\/)?ps["'`]/;

function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");
}

describe("processes are read in one place", () => {
  it("no module but identity/proc.ts and the proc*.ts files behind it opens /proc or runs ps", () => {
    const readers = sourceFiles(SRC)
      .filter((f) => READS_PROCESSES.test(code(readFileSync(f, "utf8"))))
      .map((f) => relative(SRC, f));
    // proc.ts itself only re-exports what these read
    const behindProc = [
      "procDescribe.ts",
      "procGroup.ts",
      "procLimits.ts",
      "procLocks.ts",
      "procPeer.ts",
      "procPortcullis.ts",
      "procProbe.ts",
      "procRead.ts",
      "procSockets.ts",
      "procTree.ts",
    ];
    expect(readers.sort()).toEqual(behindProc.map((f) => join("identity", f)));
  });

  it.runIf(process.platform === "linux" || process.platform === "darwin")(
    "the approval chain, the process tree and liveness agree on one start time",
    () => {
      const mine = processStartTime(process.pid);
      expect(mine).not.toBeNull();
      expect(chainStartTime(process.pid)).toBe(mine);
      expect(describeProcess(process.pid)?.startTime).toBe(mine);
      expect(describeOsProcess(process.pid)?.startTime).toBe(mine);
      expect(processChain(process.pid)[0]?.startTime).toBe(mine);
      expect(listDescendants(process.pid)[0]?.startTime).toBe(mine);
      // the parent is read the same way
      const parent = processChain(process.pid)[1];
      expect(parent?.startTime).toBe(processStartTime(process.ppid));
    },
  );
});

describe("a process's stat line", () => {
  /**
   * This process's own stat line with fields 26 to 28 (code start, code end, stack start)
   * replaced, and field 23 (virtual memory size) when given.
   */
  function withImage(fields: [string, string, string], vsize?: string): string {
    const text = readFileSync("/proc/self/stat", "utf8");
    const r = text.lastIndexOf(")");
    const f = text.slice(r + 2).split(" ");
    f.splice(23, 3, ...fields);
    if (vsize !== undefined) f[20] = vsize;
    return `${text.slice(0, r + 2)}${f.join(" ")}`;
  }

  // Read on this machine (Linux 6.x) from a child of python's subprocess, polled from its fork to
  // its end: in the middle of its execve (its new memory holds its stack, 4096 bytes, and no text
  // yet), and exiting (its memory gone, PF_EXITING set, not yet a zombie). Both say R.
  const MID_EXECVE =
    "6536 (node) R 6383 6380 1219 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 43521 4096 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 140737295796529 0 0 0 0\n";
  const EXITING =
    "6438 (node) R 6383 6380 1219 0 -1 4194316 2160 0 0 0 5 0 0 0 20 0 2 0 43353 0 0 18446744073709551615 0 0 0 0 0 0 0 16781312 17922 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

  it("one in the middle of an execve is alive (a watcher's next worker); one exiting is not", () => {
    const starting = parseProcStat(MID_EXECVE)!;
    expect([starting.state, starting.ppid, starting.image, dead(starting), starting.execing]).toEqual([
      "R",
      6383,
      null,
      false,
      true,
    ]);
    const exiting = parseProcStat(EXITING)!;
    expect([exiting.state, exiting.image, dead(exiting), exiting.execing]).toEqual(["R", null, true, false]);
    expect(parseProcStat(readFileSync("/proc/self/stat", "utf8"))!.execing).toBe(false);
  });

  it.runIf(process.platform === "linux")(
    "one exiting (its memory released, still running) is gone, not another program; a hidden one is alive",
    () => {
      const live = parseProcStat(readFileSync("/proc/self/stat", "utf8"))!;
      expect(live.image).not.toBeNull();
      expect(dead(live)).toBe(false);
      // SIGKILLed: the kernel frees its memory before it is a zombie, and its state still says R
      const exiting = parseProcStat(withImage(["0", "0", "0"], "0"))!;
      expect([exiting.state, exiting.image, dead(exiting)]).toEqual([live.state, null, true]);
      // a process the kernel will not show us (a setuid program): its image is unknown, but it runs
      const hidden = parseProcStat(withImage(["1", "1", "0"]))!;
      expect([hidden.image, dead(hidden)]).toEqual([null, false]);
    },
  );
});
