// Whether a recorded pid is, by its command line, portcullis running a command (procPortcullis.ts):
// what every sentence telling the human to end a gateway or console by pid checks first. Real
// node processes running a build-shaped entry file in a package named portcullis (by its path,
// through the bin link, relative to its cwd), a lookalike in a package of another name, a wrong
// command, another start time, a process that is not node (sleep), and no process.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { processStartTime, runsPortcullisCommand } from "../../src/identity/proc.js";
import { NODE, removeDir, tempDir } from "./fixtures.js";

const started: ChildProcess[] = [];
const root = tempDir("portcullis-cmd-");
afterAll(() => {
  for (const c of started) c.kill("SIGKILL");
  removeDir(root);
});

/** A package `name` with dist/cli/main.cjs that says "ready" and waits. Returns the entry's path. */
function pkg(name: string): string {
  const dir = join(root, name);
  mkdirSync(join(dir, "dist", "cli"), { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name }));
  const entry = join(dir, "dist", "cli", "main.cjs");
  writeFileSync(entry, 'process.stdout.write("ready\\n"); setInterval(() => {}, 1e9);\n');
  return entry;
}

/** Starts `cmd args` and waits for its first output (after exec: its command line is its own). */
async function ready(cmd: string, args: string[], cwd?: string): Promise<number> {
  const child = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "ignore"] });
  started.push(child);
  await once(child.stdout!, "data");
  return child.pid!;
}

describe.runIf(process.platform === "linux")("runsPortcullisCommand", () => {
  const ours = pkg("portcullis");
  const other = pkg("other-tool");

  it("node running portcullis's entry with the command: by path, by the bin link, relative to its cwd", async () => {
    const direct = await ready(NODE, ["--no-warnings", ours, "run", "--label", "x"]);
    expect(runsPortcullisCommand(direct, "run")).toBe(true);
    expect(runsPortcullisCommand(direct, "run", processStartTime(direct))).toBe(true);
    const bin = join(root, "portcullis-bin");
    symlinkSync(ours, bin);
    expect(runsPortcullisCommand(await ready(NODE, [bin, "console"]), "console")).toBe(true);
    const relative = await ready(NODE, ["dist/cli/main.cjs", "run"], join(root, "portcullis"));
    expect(runsPortcullisCommand(relative, "run")).toBe(true);
  });

  it("not: another command, another start time, a lookalike of another package, sleep, no process", async () => {
    const consolePid = await ready(NODE, [ours, "console"]);
    expect(runsPortcullisCommand(consolePid, "run")).toBe(false);
    expect(runsPortcullisCommand(consolePid, "console", "1")).toBe(false);
    expect(runsPortcullisCommand(await ready(NODE, [other, "run"]), "run")).toBe(false);
    // a process that is not node, and no process at all
    const sleep = spawn("sleep", ["100"], { stdio: "ignore" });
    started.push(sleep);
    expect(runsPortcullisCommand(sleep.pid!, "run")).toBe(false);
    expect(runsPortcullisCommand(2 ** 22 + 1, "run")).toBe(false);
  });
});
