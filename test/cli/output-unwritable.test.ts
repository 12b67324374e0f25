// A command whose standard output cannot be written fails in words, with exit 2, whatever the
// command: `> /dev/full` (ENOSPC, a real device that refuses every write) and a descriptor opened
// only to read (EBADF). `audit export` and `vault list` said so, but a command that finished in
// the same tick as its write (status, grants, approvals, passkey list, egress, doctor --json,
// --help, --version) exited with its own code first, 0 over an output never written: the write
// fails at once, its 'error' event only on a later tick. Real CLI processes, real devices.
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

/** The CLI with `fd` as its standard output; stderr read. */
function withStdout(
  args: string[],
  fd: number,
  stateDir: string,
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(NODE, [CLI, ...args], {
    env: hostEnv({ PORTCULLIS_HOME: stateDir }),
    stdio: ["ignore", fd, "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stderr })));
}

const COMMANDS = [
  ["status"],
  ["status", "--json"],
  ["grants", "--json"],
  ["approvals", "--json"],
  ["passkey", "list"],
  ["egress", "--json"],
  ["doctor", "--json"],
  ["audit", "verify"],
  ["audit", "checkpoint"],
  ["vault", "list", "--json"],
  ["--help"],
  ["--version"],
];

/**
 * What the second device changes is the errno, so the sentence (src/util/errno.ts), not the path a
 * command takes to it: every command meets the full disk, and the descriptor opened to read is
 * met by a command that finishes in the tick of its write (--version) and by one that reads the
 * store first (audit verify). Each command is a process of its own (about 0.25 s of CPU).
 */
const EBADF_COMMANDS = [["--version"], ["audit", "verify"]];

describe("standard output that cannot be written", () => {
  it("is one sentence and exit 2 from every command: a full disk (/dev/full), a descriptor opened to read", async () => {
    const stateDir = newStateDir();
    // the store is made, so every command has something to print
    expect((await runCli(["vault", "list"], { stateDir })).code).toBe(0);
    const full = openSync("/dev/full", "w");
    const readOnly = openSync("/dev/null", "r");
    try {
      for (const [fd, said, commands] of [
        [full, "the disk is full (ENOSPC)", COMMANDS],
        [
          readOnly,
          "it is not open for writing (a file opened only to read, or closed) (EBADF)",
          EBADF_COMMANDS,
        ],
      ] as const) {
        for (const args of commands) {
          const r = await withStdout(args, fd, stateDir);
          // named by the command, its subcommand included, as every failure is (README, "Commands")
          const named = args.filter((a) => !a.startsWith("-")).join(" ") || args[0];
          expect(r.stderr, args.join(" ")).toBe(
            `portcullis ${named}: standard output cannot be written: ${said}; what it received is incomplete.\n`,
          );
          expect(r.code, args.join(" ")).toBe(2);
        }
      }
    } finally {
      closeSync(full);
      closeSync(readOnly);
      removeDir(stateDir);
    }
  });
});
