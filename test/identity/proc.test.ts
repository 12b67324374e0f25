import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  DigestCache,
  listDescendants,
  type ProcessFact,
  processStartTime,
} from "../../src/identity/index.js";
import { NODE, put, removeDir, sha256File, sleep, tempDir } from "./fixtures.js";

const started: ChildProcess[] = [];

/** Starts a process in its own process group so the whole tree can be ended by its id. */
function start(cmd: string, args: string[], cwd?: string): ChildProcess {
  const child = spawn(cmd, args, { cwd, stdio: "ignore", detached: true });
  started.push(child);
  return child;
}

function endGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {}
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

afterEach(() => {
  for (const c of started.splice(0)) endGroup(c);
});

describe.skipIf(process.platform !== "linux" && process.platform !== "darwin")("process trees", () => {
  let root: string;
  beforeAll(() => {
    root = tempDir("proc");
  });
  afterAll(() => removeDir(root));

  it("sees a child started through sh -c and the grandchild it spawns", async () => {
    const grandchild = `require("node:child_process").spawn("sleep", ["60"], { stdio: "ignore" }); setInterval(() => {}, 1000);`;
    // `; :` keeps sh from exec'ing node in its place: sh stays the parent.
    const sh = start("sh", ["-c", `"${NODE}" -e '${grandchild}'; :`]);
    const pid = sh.pid!;
    // Until the grandchild has exec'd, it is a forked copy of node: wait for `sleep`.
    const tree = await until("three processes", () => {
      const t = listDescendants(pid);
      return t.length === 3 && t[2]!.argv[0] === "sleep" ? t : undefined;
    });
    const [shFact, nodeFact, sleepFact] = tree as [ProcessFact, ProcessFact, ProcessFact];
    expect(shFact.pid).toBe(pid);
    expect(shFact.ppid).toBe(process.pid);
    expect(shFact.argv.slice(0, 2)).toEqual(["sh", "-c"]);
    expect(nodeFact.ppid).toBe(pid);
    expect(nodeFact.exe).toBe(NODE);
    expect(nodeFact.argv[1]).toBe("-e");
    expect(sleepFact.ppid).toBe(nodeFact.pid);
    expect(sleepFact.argv).toEqual(["sleep", "60"]);
    for (const f of tree) expect(f.startTime).toBe(processStartTime(f.pid));
    // Something that is not part of the tree is not listed.
    const unrelated = start("sleep", ["60"]);
    await sleep(100);
    expect(listDescendants(pid).map((f) => f.pid)).not.toContain(unrelated.pid);
    expect(listDescendants(unrelated.pid!).map((f) => f.pid)).toEqual([unrelated.pid]);

    endGroup(sh);
    await until("the tree to be gone", () => (listDescendants(pid).length === 0 ? true : undefined));
    for (const f of tree) {
      await until(`pid ${f.pid} to end`, () => (processStartTime(f.pid) === null ? true : undefined));
    }
  });

  it("processStartTime is stable while a process lives and null once it has exited", async () => {
    const child = start("sleep", ["0.3"]);
    const pid = child.pid!;
    const t1 = processStartTime(pid);
    expect(t1).toMatch(/\S/);
    await sleep(50);
    expect(processStartTime(pid)).toBe(t1);
    await once(child, "exit");
    expect(processStartTime(pid)).toBeNull();
    expect(listDescendants(pid)).toEqual([]);
    expect(processStartTime(-1)).toBeNull();
    expect(processStartTime(0)).toBeNull();
  });

  it("digests each process's executable and script when given a cache", async () => {
    const script = put(root, "idle.js", "setInterval(() => {}, 1000);\n");
    const child = start(NODE, ["idle.js"], root);
    const facts = await until("the process", () => {
      const t = listDescendants(child.pid!, { digest: new DigestCache(null), cwd: root });
      return t.length === 1 && t[0]!.argv.length === 2 ? t : undefined;
    });
    expect(facts[0]!.exeSha256).toBe(sha256File(NODE));
    expect(facts[0]!.scripts).toEqual([{ path: "idle.js", sha256: sha256File(script) }]);
    const bare = listDescendants(child.pid!);
    expect(bare[0]!.exeSha256).toBeNull();
    expect(bare[0]!.scripts).toEqual([]);
  });

  it("notices node --watch replacing its child: a new descendant pid after the file changes", async () => {
    const dir = join(root, "watch");
    const file = put(dir, "server.js", "setInterval(() => {}, 1000); // v1\n");
    const watcher = start(NODE, ["--watch", "server.js"], dir);
    const pid = watcher.pid!;
    const first = await until("the watched child", () => {
      const t = listDescendants(pid);
      return t.length === 2 && t[1]!.argv.includes("server.js") ? t : undefined;
    });
    const firstPids = new Set(first.map((f) => f.pid));
    expect(first[0]!.argv).toContain("--watch");
    expect(first[1]!.ppid).toBe(pid);
    let lastWrite = 0;

    // node --watch starts watching a file once its child reports loading it: until then a write
    // can go unnoticed. Rebuild until the watcher reacts (each write is a real rebuild).
    let version = 2;
    const replaced = await until("a replacement child", () => {
      const t = listDescendants(pid);
      if (t.some((f) => !firstPids.has(f.pid) && f.argv.includes("server.js"))) return t;
      if (Date.now() - lastWrite > 1500) {
        put(dir, "server.js", `setInterval(() => {}, 1000); // v${version++}, rebuilt\n`);
        lastWrite = Date.now();
      }
      return undefined;
    });
    const fresh = replaced.filter((f) => !firstPids.has(f.pid));
    expect(fresh).toHaveLength(1);
    expect(fresh[0]!.ppid).toBe(pid);
    expect(replaced[0]!.pid).toBe(pid); // the watcher, holding the pipe, is the same process
    expect(processStartTime(first[1]!.pid)).toBeNull();
    // And the replacement runs the new code.
    const digested = listDescendants(pid, { digest: new DigestCache(null), cwd: dir });
    expect(digested.find((f) => f.pid === fresh[0]!.pid)?.scripts).toEqual([
      { path: "server.js", sha256: sha256File(file) },
    ]);
  });
});
