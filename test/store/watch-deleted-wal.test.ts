// `portcullis approvals --watch` keeps the store open for as long as a human leaves it running,
// and closes abandoned requests as it reads. Its store's -wal and -shm deleted: it went on
// listing a store nobody writes any more (a gateway started since was not seen) and printed, at
// each read where something was due, that it could not close abandoned requests, without end.
// It must end as the console does: exit 2, the sentence naming the file once on stderr.
// A real `approvals --watch` process.
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { hostEnv } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

describe("the store's -wal and -shm deleted under 'approvals --watch'", () => {
  it("it ends (exit 2), naming the file once", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const child = spawn(NODE, [CLI, "approvals", "--watch", "--state-dir", stateDir], {
      env: hostEnv({}),
      stdio: ["ignore", "pipe", "pipe"],
    });
    cleanup.push(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    // its output read to the end, not only its exit: what it said of the deleted file is its last line
    const exited = exitWithOutput(child).then(({ code }) => code);
    // its first list is drawn: the store is open
    await waitFor(() => (stdout.length > 0 ? true : null), 15_000, "the first list");
    for (const side of ["-wal", "-shm"]) rmSync(join(stateDir, `portcullis.db${side}`));
    const code = await Promise.race([
      exited,
      new Promise<"running">((r) => setTimeout(() => r("running"), 20_000)),
    ]);
    expect(code, stderr).toBe(2);
    const said = stderr.split("\n").filter((l) => l.includes("was deleted or replaced"));
    expect(said).toEqual([expect.stringContaining(join(stateDir, "portcullis.db-wal"))]);
  }, 60_000);
});
