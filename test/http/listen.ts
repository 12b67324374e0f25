// `portcullis run --listen` started as a real process for the HTTP tests: the built CLI on a free
// loopback port (port 0 is resolved from the "listening on" status line), a fresh state dir with
// the test keyring, and the bearer token read from the file the gateway generated.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type ExitInfo, exitWithOutput } from "../helpers/exitWithOutput.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

export interface Listener {
  url: string;
  port: number;
  /** the generated bearer token (null with --no-auth) */
  token: string | null;
  stateDir: string;
  proc: ChildProcess;
  stderr(): string;
  /** its exit, once its stderr was read to the end too (bounded): stderr() then holds its last line */
  exited: Promise<ExitInfo>;
  /** Authorization (and the JSON/SSE Accept a Streamable HTTP client sends) */
  headers(extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

export async function startListener(
  command: string[],
  opts: {
    args?: string[];
    label?: string;
    env?: Record<string, string>;
    stateDir?: string;
    /** --listen value (default 127.0.0.1:0) */
    address?: string;
    /** run LABEL from this portcullis.json (its "listen" key) instead of --listen -- COMMAND */
    configFile?: string;
    /** a command the gateway runs under (`prlimit --nofile=N:N --`) */
    prefix?: string[];
  } = {},
): Promise<Listener> {
  const stateDir = opts.stateDir ?? newStateDir();
  const label = opts.label ?? "http-test";
  const args = opts.configFile
    ? [CLI, "run", "--state-dir", stateDir, "--config", opts.configFile, ...(opts.args ?? []), label]
    : [
        CLI,
        "run",
        "--state-dir",
        stateDir,
        "--label",
        label,
        "--listen",
        opts.address ?? "127.0.0.1:0",
        ...(opts.args ?? []),
        // no command: the server is given in `args` (--url URL)
        ...(command.length > 0 ? ["--", ...command] : []),
      ];
  const [program, ...argv] = opts.prefix ? [...opts.prefix, NODE, ...args] : [NODE, ...args];
  const proc = spawn(
    program!,
    argv,
    // no console started on demand for the approval requests these gateways make (it outlives them)
    { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, PORTCULLIS_NO_CONSOLE: "1", ...opts.env } },
  );
  let err = "";
  // decoded as a stream: a chunk can end inside a character of several bytes
  proc.stderr!.setEncoding("utf8").on("data", (c: string) => {
    err += c;
  });
  // once its output was read to its end too: a test reads stderr() once it was closed
  const exited = exitWithOutput(proc);
  const url = await waitFor(
    () => {
      if (proc.exitCode !== null) throw new Error(`run --listen exited ${proc.exitCode}: ${err}`);
      return /listening on (http:\/\/\S+\/mcp)/.exec(err)?.[1];
    },
    20_000,
    "the listening line",
  );
  const noAuth = opts.args?.includes("--no-auth") ?? false;
  const tokenFile = opts.args?.includes("--listen-token-file")
    ? opts.args[opts.args.indexOf("--listen-token-file") + 1]!
    : join(stateDir, "listen", `${label}.token`);
  const token = noAuth ? null : readFileSync(tokenFile, "utf8").trim();
  return {
    url,
    port: Number(new URL(url).port),
    token,
    stateDir,
    proc,
    stderr: () => err,
    exited,
    headers: (extra = {}) => ({
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      accept: "application/json, text/event-stream",
      "content-type": "application/json",
      ...extra,
    }),
    close: async () => {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      await exited;
      if (!opts.stateDir) removeDir(stateDir);
    },
  };
}
