// A gateway in front of the exhaust fixture (test/fixtures/servers/exhaust.mjs) with a raw client
// on plain pipes: for the tests of what a hostile server does faster than the other end takes
// (hostile-exhaustion, deaf-server-bounds). Raw, not an SDK client: the tests flood the pipes,
// read the gateway's memory from /proc, and choose whether anyone reads the gateway's stderr.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { exitWithOutput } from "./exitWithOutput.js";
import { removeDir, waitFor } from "./files.js";
import { bundledFixture } from "./fixtureBundle.js";
import { assertBuilt, hostEnv } from "./gateway.js";
import { CLI, NODE, REPO } from "./paths.js";
import { newStateDir } from "./state.js";

export const EXHAUST =
  bundledFixture(REPO, "exhaust") ?? join(REPO, "test", "fixtures", "servers", "exhaust.mjs");
export const MIB = 1024 * 1024;

/** A message the client got (loosely typed). */
export interface Msg {
  id?: unknown;
  method?: string;
  result?: { content?: { text?: string }[] };
  error?: { code: number; message: string; data?: { error?: string } };
}

/** A process's resident memory, MiB. */
export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1]) / 1024;
}

export interface ExhaustGatewayOptions {
  label: string;
  env?: Record<string, string>;
  /** flags of `run` before `--` */
  args?: string[];
  /**
   * "collected": the gateway's stderr is read into `stderr()`; "left": nobody reads it unless the
   * test does (a host that reads none of it is what some cases test)
   */
  stderr: "collected" | "left";
}

/** Starts it; its end is handed to `onCleanup` (the test file's cleanup list). */
export function startExhaustGateway(
  o: ExhaustGatewayOptions,
  onCleanup: (end: () => Promise<void> | void) => void,
) {
  assertBuilt();
  const stateDir = newStateDir();
  const gw: ChildProcessWithoutNullStreams = spawn(
    NODE,
    [CLI, "run", "--state-dir", stateDir, "--label", o.label, "--approval", "none", ...(o.args ?? [])].concat(
      ["--", NODE, EXHAUST],
    ),
    { env: { ...hostEnv(), ...o.env }, stdio: ["pipe", "pipe", "pipe"] },
  );
  const exited = new Promise<void>((resolve) => gw.once("exit", () => resolve()));
  // its stdout (and stderr, when collected) read to the end as well: "exit" may come before the
  // last of it was read. Not "close": a server the gateway left running could hold a pipe open
  // for ever, and stderr is not read at all unless collected
  const closed = exitWithOutput(gw, o.stderr === "collected" ? [gw.stdout, gw.stderr] : [gw.stdout]).then(
    () => {},
  );
  onCleanup(async () => {
    // SIGTERM first: the gateway ends its server on it (a SIGKILLed gateway leaves its deaf
    // server running, an orphan, after a failed case); SIGKILL if it has not ended in 5 s
    if (gw.exitCode === null && gw.signalCode === null) {
      gw.kill("SIGTERM");
      const late = setTimeout(() => gw.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(late);
    }
    await exited;
  });
  onCleanup(() => removeDir(stateDir));
  const answers = new Map<unknown, Msg>();
  const methods = new Map<string, number>(); // the server's requests and notifications, by method
  const requests: Msg[] = []; // the server's requests, as the client got them
  let partial = "";
  gw.stdout.setEncoding("utf8");
  gw.stdout.on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      const m = JSON.parse(line) as Msg;
      if (m.method !== undefined) {
        methods.set(m.method, (methods.get(m.method) ?? 0) + 1);
        if (m.id !== undefined) requests.push(m);
      } else if (m.id !== undefined) answers.set(m.id, m);
    }
  });
  let stderr = "";
  if (o.stderr === "collected") {
    gw.stderr.setEncoding("utf8");
    gw.stderr.on("data", (s: string) => {
      stderr += s;
    });
  }
  const send = (m: object) => gw.stdin.write(`${JSON.stringify(m)}\n`);
  const answer = (id: string, ms = 30_000) => waitFor(() => answers.get(id), ms, `the answer to ${id}`);
  const call = (id: string, name: string, args: object = {}) => {
    send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
    return answer(id);
  };
  /** The client's initialize (2025-06-18, with `capabilities`), answered; nothing sent after it. */
  const initialize = async (capabilities: object = { roots: {} }) => {
    send({
      jsonrpc: "2.0",
      id: "init",
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities, clientInfo: { name: "x", version: "1" } },
    });
    return answer("init");
  };
  const init = async () => {
    await initialize();
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: "list", method: "tools/list" });
    expect((await answer("list")).result).toBeDefined();
  };
  /**
   * The client ends its input; resolves once the gateway has exited (it read everything before)
   * and all it wrote was read here.
   */
  const end = async () => {
    gw.stdin.end();
    await closed;
  };
  const text = (m: Msg) => m.result?.content?.[0]?.text;
  return {
    gw,
    stateDir,
    send,
    answer,
    call,
    initialize,
    init,
    end,
    text,
    answers,
    methods,
    requests,
    stderr: () => stderr,
  };
}
