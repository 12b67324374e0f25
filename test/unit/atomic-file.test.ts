// src/util/atomicFile.ts on a real file system: the one atomic write every file portcullis
// replaces goes through (keyring.json, wrap's host files, the egress CA, the console's address,
// the digest cache).
//
// A write killed at its own steps, not at a guessed moment: a child process runs the built module
// with node:fs's writeSync or renameSync wrapped so that it stops there (after a short first write
// of half the bytes, before the rename, after it) and leaves a marker; the test SIGKILLs it there.
// The file then holds the old bytes or the new, never a mix, and the half-written copy was 0600
// whatever mode the file is given. What each case would catch: a file written in place (the kill
// mid-write leaves it cut); a temporary file created with the file's wider mode, or opened without
// O_EXCL (a symlink planted at its name is followed and its target overwritten); a temporary file
// left behind by a write that failed; an exclusive write that replaces.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { TempNotWrittenError, writeFileAtomic } from "../../src/util/atomicFile.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { NODE, REPO } from "../helpers/paths.js";

const MODULE = pathToFileURL(join(REPO, "dist", "util", "atomicFile.js")).href;
const OLD = "o".repeat(1 << 20);
const NEW = "n".repeat(1 << 20);

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

function dir(): string {
  const d = tempDir("portcullis-atomic-");
  cleanup.push(() => removeDir(d));
  return d;
}

/** The names in `d` other than `keep`: a temporary file left over shows here. */
function others(d: string, ...keep: string[]): string[] {
  return readdirSync(d).filter((n) => !keep.includes(n));
}

type Stop = "mid-write" | "before-rename" | "after-rename";

/**
 * A child writing NEW over `path` with mode 0644, stopped at `stop` (a marker file `waiting`
 * beside the gate says it is there), and SIGKILLed there.
 */
async function killedAt(stop: Stop, path: string): Promise<void> {
  const gate = dir();
  const script = join(gate, "writer.mjs");
  writeFileSync(
    script,
    `import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
const path = ${JSON.stringify(path)};
const stop = ${JSON.stringify(stop)};
const hold = () => {
  fs.writeFileSync(${JSON.stringify(join(gate, "waiting"))}, "");
  const nap = new Int32Array(new SharedArrayBuffer(4));
  for (;;) Atomics.wait(nap, 0, 0, 1000);
};
const realWrite = fs.writeSync;
let firstWrite = true;
fs.writeSync = function (fd, bytes, off, len) {
  if (stop !== "mid-write" || !firstWrite) return realWrite.apply(this, arguments);
  firstWrite = false;
  // a short write, as write(2) may make: half the bytes, then the process stops there
  realWrite.call(this, fd, bytes, off, Math.floor(len / 2));
  hold();
};
const realRename = fs.renameSync;
fs.renameSync = function (from, to) {
  if (to === path && stop === "before-rename") hold();
  const r = realRename.apply(this, arguments);
  if (to === path && stop === "after-rename") hold();
  return r;
};
syncBuiltinESMExports();
const { writeFileAtomic } = await import(${JSON.stringify(MODULE)});
writeFileAtomic(path, ${JSON.stringify(NEW.slice(0, 1))}.repeat(${NEW.length}), { mode: 0o644 });
`,
  );
  const child: ChildProcess = spawn(NODE, [script], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (c: string) => {
    stderr += c;
  });
  // ended once its stderr is read to the end too: a writer that failed has said all of why
  let ended = false;
  const exited = exitWithOutput(child, [child.stderr!]).then(() => {
    ended = true;
  });
  cleanup.push(() => child.kill("SIGKILL"));
  await waitFor(() => existsSync(join(gate, "waiting")) || ended, 10_000, `the writer at ${stop}`);
  expect(stderr).toBe("");
  expect(existsSync(join(gate, "waiting"))).toBe(true);
  child.kill("SIGKILL");
  await exited;
}

describe("writeFileAtomic", () => {
  it("writes a new file and replaces one with the mode given exactly, leaving no temporary file", () => {
    const d = dir();
    const path = join(d, "file.json");
    writeFileAtomic(path, "first\n");
    expect(readFileSync(path, "utf8")).toBe("first\n");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    writeFileAtomic(path, Buffer.from("second\n"), { mode: 0o644 });
    expect(readFileSync(path, "utf8")).toBe("second\n");
    expect(statSync(path).mode & 0o777).toBe(0o644);
    expect(others(d, "file.json")).toEqual([]);
  });

  for (const stop of ["mid-write", "before-rename"] as const) {
    it(`killed ${stop}: the file holds the old bytes whole, and the copy it wrote was never readable by others`, async () => {
      const d = dir();
      const path = join(d, "host.json");
      writeFileSync(path, OLD, { mode: 0o644 });
      await killedAt(stop, path);
      expect(readFileSync(path, "utf8") === OLD).toBe(true);
      const left = others(d, "host.json");
      expect(left).toHaveLength(1);
      const temp = join(d, left[0]!);
      // mid-write it holds half, 0600; before the rename it is whole and already has its mode
      const held = readFileSync(temp, "utf8");
      if (stop === "mid-write") {
        expect(held.length).toBe(NEW.length / 2);
        expect(statSync(temp).mode & 0o777).toBe(0o600);
      } else {
        expect(held === NEW).toBe(true);
        expect(statSync(temp).mode & 0o777).toBe(0o644);
      }
    });
  }

  it("killed right after the rename: the file holds the new bytes whole, with its mode", async () => {
    const d = dir();
    const path = join(d, "host.json");
    writeFileSync(path, OLD, { mode: 0o600 });
    await killedAt("after-rename", path);
    expect(readFileSync(path, "utf8") === NEW).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o644);
    expect(others(d, "host.json")).toEqual([]);
  });

  it("does not follow a symlink planted at its temporary file's name: the write fails, the link's target untouched", () => {
    const d = dir();
    const path = join(d, "keyring.json");
    const victim = join(d, "victim");
    writeFileSync(path, "old\n");
    writeFileSync(victim, "victim's own\n");
    const planted = join(d, "planted.tmp");
    symlinkSync(victim, planted);
    let thrown: unknown;
    try {
      writeFileAtomic(path, "new secret\n", { tempPath: () => planted });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(TempNotWrittenError);
    expect((thrown as TempNotWrittenError).code).toBe("EEXIST");
    expect((thrown as Error).message).toContain(planted);
    expect(readFileSync(victim, "utf8")).toBe("victim's own\n");
    expect(readFileSync(path, "utf8")).toBe("old\n");
    // not its own: the link is left where it was
    expect(readlinkSync(planted)).toBe(victim);
  });

  it("replaces a symlink at the file's own name, never writing through it", () => {
    const d = dir();
    const target = join(d, "elsewhere");
    writeFileSync(target, "elsewhere's own\n");
    const path = join(d, "console.json");
    symlinkSync(target, path);
    writeFileAtomic(path, "address\n");
    expect(lstatSync(path).isSymbolicLink()).toBe(false);
    expect(readFileSync(path, "utf8")).toBe("address\n");
    expect(readFileSync(target, "utf8")).toBe("elsewhere's own\n");
  });

  it("exclusive: writes a file that is not there, refuses (EEXIST) one that is, leaving no temporary file", () => {
    const d = dir();
    const path = join(d, "keyring.json");
    writeFileAtomic(path, "made\n", { exclusive: true });
    expect(readFileSync(path, "utf8")).toBe("made\n");
    expect(() => writeFileAtomic(path, "again\n", { exclusive: true })).toThrow(
      expect.objectContaining({ code: "EEXIST" }),
    );
    expect(readFileSync(path, "utf8")).toBe("made\n");
    expect(others(d, "keyring.json")).toEqual([]);
  });

  it("a rename that fails leaves the file as it was and no temporary file", () => {
    const d = dir();
    const path = join(d, "busy");
    mkdirSync(path);
    writeFileSync(join(path, "inside"), "");
    expect(() => writeFileAtomic(path, "new\n")).toThrow();
    expect(statSync(path).isDirectory()).toBe(true);
    expect(others(d, "busy")).toEqual([]);
  });

  it("bytes that cannot all be written (the file size limit) replace nothing and leave no temporary file", () => {
    const d = dir();
    const path = join(d, "host.json");
    writeFileSync(path, "old\n");
    // 1 block of 512 bytes: the 1 MiB write stops partway (EFBIG), in a shell of its own
    const script = `const { writeFileAtomic } = await import(${JSON.stringify(MODULE)});
try { writeFileAtomic(${JSON.stringify(path)}, "x".repeat(1 << 20)); } catch (e) { console.log(e.name, e.code); }`;
    const r = spawnSync("sh", ["-c", `ulimit -f 1 && exec "$0" --input-type=module -e "$1"`, NODE, script], {
      encoding: "utf8",
    });
    expect(r.stdout.trim()).toBe("TempNotWrittenError EFBIG");
    expect(readFileSync(path, "utf8")).toBe("old\n");
    expect(others(d, "host.json")).toEqual([]);
  });
});
