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
    const behindProc = ["procDescribe.ts", "procPeer.ts", "procProbe.ts", "procRead.ts", "procTree.ts"];
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
