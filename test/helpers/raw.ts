// A raw stdio peer: spawn a process and talk newline-delimited JSON-RPC to it by hand, for
// tests that must write what no SDK client writes (malformed lines, batches, odd ids) or see
// exactly what comes back.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { completeJsonLines } from "./completeLines.js";
import { type ExitInfo, exitWithOutput } from "./exitWithOutput.js";
import { removeDir, waitFor } from "./files.js";
import type { WireMessage } from "./gateway.js";
import { assertBuilt, hostEnv } from "./gateway.js";
import { CLI, FIXTURES, NODE } from "./paths.js";
import { newStateDir } from "./state.js";

/** What a raw peer declares in its initialize unless told otherwise: it may be asked anything. */
export const RAW_CLIENT_CAPABILITIES = { roots: {}, sampling: {}, elicitation: {} };

export interface RawPeer {
  pid: number;
  /** an object is serialized and newline-terminated; a string is written verbatim (add "\n" yourself) */
  send(message: object | string): void;
  /** resolve with the first parsed stdout message matching `predicate` that no earlier next() returned */
  next(predicate?: (message: WireMessage) => boolean, ms?: number): Promise<WireMessage>;
  /** send a request with a fresh id ("raw-N") and resolve with its response (result or error) */
  request(method: string, params?: unknown, ms?: number): Promise<WireMessage>;
  /** legacy handshake: initialize (protocolVersion 2025-11-25 unless given) + notifications/initialized */
  initialize(params?: Record<string, unknown>, ms?: number): Promise<WireMessage>;
  /** every stdout line so far (without the newline), parsable or not */
  lines(): string[];
  /** every stdout line that parsed as JSON */
  messages(): WireMessage[];
  stderr(): string;
  closeStdin(): void;
  kill(signal?: NodeJS.Signals): void;
  /** its exit, once its stdout and stderr were read to their end (bounded: exitWithOutput) */
  exited: Promise<ExitInfo>;
  /** kill if still running, wait for exit, remove a state dir we created */
  close(): Promise<void>;
}

/** A raw peer on a gateway: the state dir it was started with (a fresh temp dir unless given). */
export type RawGateway = RawPeer & { stateDir: string };

export function rawPeer(
  command: string,
  args: string[],
  env: Record<string, string> = {},
  options: { cwd?: string; onClose?: () => void } = {},
): RawPeer {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: hostEnv(env),
    stdio: ["pipe", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const messages: WireMessage[] = [];
  const taken = new Set<WireMessage>();
  let stderrText = "";
  // the start of a line whose end has not come yet, in the chunks it came in
  let partial: string[] = [];
  let nextId = 0;
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    // Only the new chunk is searched for a line's end: a result of 12 MB comes in 64 KB chunks,
    // and appending each to the line so far and searching the whole again flattened and scanned
    // it at every chunk (about 4 s of CPU for one 12 MB line, against 0.05 s).
    let start = 0;
    let nl = chunk.indexOf("\n");
    while (nl >= 0) {
      const line = (partial.join("") + chunk.slice(start, nl)).replace(/\r$/, "");
      partial = [];
      start = nl + 1;
      nl = chunk.indexOf("\n", start);
      lines.push(line);
      try {
        messages.push(JSON.parse(line) as WireMessage);
      } catch {
        // kept in lines() only
      }
    }
    if (start < chunk.length) partial.push(chunk.slice(start));
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderrText += chunk.toString();
  });
  child.stdin.on("error", () => {}); // writing to a peer that died is the test's business
  // once its stdout and stderr are read to their end too: a test reads stderr() right after it
  const exited = exitWithOutput(child);

  const next = async (predicate: (message: WireMessage) => boolean = () => true, ms = 10_000) => {
    try {
      const found = await waitFor(
        () => messages.find((m) => !taken.has(m) && predicate(m)),
        ms,
        "a matching message on stdout",
      );
      taken.add(found);
      return found;
    } catch (error) {
      throw new Error(
        `${(error as Error).message}\n--- stdout (${lines.length} lines, last 5) ---\n${lines
          .slice(-5)
          .map((l) => l.slice(0, 500))
          .join("\n")}\n--- stderr ---\n${stderrText}`,
      );
    }
  };
  const send = (message: object | string) => {
    child.stdin.write(typeof message === "string" ? message : `${JSON.stringify(message)}\n`);
  };
  const request = (method: string, params?: unknown, ms?: number) => {
    const id = `raw-${++nextId}`;
    send(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params });
    return next((m) => m.id === id && m.method === undefined, ms);
  };
  return {
    pid: child.pid ?? -1,
    send,
    next,
    request,
    initialize: async (params = {}, ms) => {
      const response = await request(
        "initialize",
        {
          protocolVersion: "2025-11-25",
          // a client that answers what the server asks: the gateway sends a client no request for
          // a capability it did not declare (ServerRequests.relay)
          capabilities: RAW_CLIENT_CAPABILITIES,
          clientInfo: { name: "portcullis-raw-peer", version: "1.0.0" },
          ...params,
        },
        ms,
      );
      send({ jsonrpc: "2.0", method: "notifications/initialized" });
      return response;
    },
    lines: () => lines,
    messages: () => messages,
    stderr: () => stderrText,
    closeStdin: () => child.stdin.end(),
    kill: (signal = "SIGTERM") => {
      child.kill(signal);
    },
    exited,
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin.end();
        // A server that does not end with its stdin is given its grace by the gateway; past 3 s
        // two signals (the second hurries a shutdown under way: every group is killed), so that
        // no server is left running under pid 1, as a SIGKILL of the gateway alone would leave it
        const hurry = setTimeout(() => {
          child.kill("SIGTERM");
          child.kill("SIGTERM");
        }, 3_000);
        const timer = setTimeout(() => child.kill("SIGKILL"), 8_000);
        await exited;
        clearTimeout(hurry);
        clearTimeout(timer);
      }
      options.onClose?.();
    },
  };
}

/** A raw peer on `node dist/cli/main.cjs run --state-dir <dir> ...args` (fresh temp state dir by default). */
export function rawGateway(options: {
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
  stateDir?: string;
  /** node's own flags for the gateway process (NODE_OPTIONS refuses V8 flags) */
  nodeFlags?: string[];
}): RawGateway {
  assertBuilt();
  const stateDir = options.stateDir ?? newStateDir();
  const own = options.stateDir === undefined;
  const peer = rawPeer(
    NODE,
    [...(options.nodeFlags ?? []), CLI, "run", "--state-dir", stateDir, ...options.args],
    options.env,
    {
      cwd: options.cwd,
      onClose: () => {
        if (own) removeDir(stateDir);
      },
    },
  );
  return { ...peer, stateDir };
}

/** The rawlines fixture's one tool when it lists one: its argument `line` is what it answers with. */
export const ECHO_RAW_TOOLS = [
  { name: "echo_raw", inputSchema: { type: "object", properties: { line: { type: "string" } } } },
];

/**
 * A gateway (`--approval none`) before the rawlines fixture listing one tool, `reply`, and
 * `answerWith(result, meta)`: a tools/call (its `_meta` given) that the server answers with
 * `result` under the call's own id. The gateway is closed by `cleanup`.
 */
export function replyGateway(
  cleanup: (() => Promise<void> | void)[],
  label = "asker",
): { gw: RawGateway; answerWith(result: unknown, meta?: unknown): Promise<WireMessage> } {
  const gw = rawGateway({
    args: ["--label", label, "--approval", "none", "--", NODE, FIXTURES.rawlines],
    env: {
      FIXTURE_RAW_TOOLS: JSON.stringify([
        { name: "reply", inputSchema: { type: "object", properties: { line: { type: "string" } } } },
      ]),
    },
  });
  cleanup.push(() => gw.close());
  const answerWith = (result: unknown, meta?: unknown) =>
    gw.request("tools/call", {
      name: "reply",
      // the fixture writes the line with the call's id in place of the bare ID
      arguments: { line: JSON.stringify({ jsonrpc: "2.0", id: "ID", result }).replace('"ID"', "ID") },
      ...(meta === undefined ? {} : { _meta: meta }),
    });
  return { gw, answerWith };
}

/**
 * A raw peer on a gateway in front of the rawlines fixture (a server that writes the lines it is
 * told to, as given), and the lines that server received, read from its log. With `tools`, the
 * fixture lists them, and the catalog is fetched (a tools/list) before this resolves. `approval`:
 * the gateway's `--approval` (none unless given).
 */
export async function rawlinesGateway(
  extra: string[] = [],
  opts: { label?: string; tools?: unknown[]; approval?: "none" | "session" | "per-call" } = {},
): Promise<{ peer: RawGateway; received: () => string[] }> {
  const log = join(newStateDir(), "raw.log");
  const label = opts.label ?? "rawlines";
  const approval = opts.approval ?? "none";
  const peer = rawGateway({
    args: ["--label", label, "--approval", approval, ...extra, "--", NODE, FIXTURES.rawlines],
    env: {
      FIXTURE_RAW_LOG: log,
      ...(opts.tools ? { FIXTURE_RAW_TOOLS: JSON.stringify(opts.tools) } : {}),
    },
  });
  try {
    await peer.initialize();
    if (opts.tools) await peer.request("tools/list");
  } catch (e) {
    await peer.close();
    throw e;
  }
  const received = () => {
    try {
      // only lines written whole: the peer may be writing the next one as this reads
      return completeJsonLines<string>(readFileSync(log, "utf8"));
    } catch {
      return [];
    }
  };
  return { peer, received };
}

/**
 * Puts a `slow_write` of the revisioned project's server (test/helpers/project.ts) at the server
 * under the id `id`, and resolves once the server has counted it (`counter()` one higher): a call
 * whose answer waits for the project's release.
 */
export async function slowWriteAtServer(
  gw: RawPeer,
  project: { counter(): number },
  id: string | number = "slow",
): Promise<void> {
  const before = project.counter();
  gw.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "slow_write", arguments: {} } });
  await waitFor(() => project.counter() === before + 1, 10_000, "slow_write at the server");
}
