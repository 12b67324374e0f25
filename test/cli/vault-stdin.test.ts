// `vault set NAME --from-stdin` reads at most a value's worth of standard input. It read all of
// it before checking the size: a large file given by mistake went into memory whole, and a
// stream that does not end (`< /dev/zero`, a `yes |`) was read until the process ran out of
// memory, never refused. The real CLI, with /dev/zero as its standard input.
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

describe("vault set --from-stdin", () => {
  it("a standard input that never ends is refused once it is past the largest value", async () => {
    const stateDir = newStateDir();
    const zero = openSync("/dev/zero", "r");
    const child = spawn(NODE, [CLI, "vault", "set", "big", "--from-stdin", "--deliver", "env"], {
      stdio: [zero, "pipe", "pipe"],
      env: { ...process.env, PORTCULLIS_HOME: stateDir, ...passphraseEnv() },
    });
    closeSync(zero);
    let stderr = "";
    child.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    // Without the bound it reads for ever, its memory growing by gigabytes: killed well before
    // the test's own timeout (which would leave it running), the test then failing on its exit.
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    clearTimeout(timer);
    expect(stderr).toBe("portcullis vault set: the value is over 65536 bytes; nothing was stored.\n");
    expect(code).toBe(2);
  });
});
