// MCP clients for the tests: the official SDK clients connected over stdio to
//   - the gateway:  node dist/cli/main.cjs run --state-dir <dir> ...args
//   - a server directly (no gateway), to compare what the gateway shows with the real thing.
// startGateway/startDirect use the v1 SDK client (@modelcontextprotocol/sdk, legacy era);
// startModernGateway/startModernDirect use the v2 client (@modelcontextprotocol/client), which
// negotiates the 2026-07-28 era with a server/discover probe (see docs/protocol-eras.md: over
// stdio that probe runs in a separate, short-lived copy of the process).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Stream } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { Client as ModernClient } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { completeLines } from "./completeLines.js";
import { type ExitInfo, exitWithOutput, pipesOf } from "./exitWithOutput.js";
import { removeDir, waitFor } from "./files.js";
import { CLI, NODE } from "./paths.js";
import type { Project } from "./project.js";
import { newStateDir } from "./state.js";

/** A JSON-RPC message as seen on the wire (loosely typed: both SDK eras). */
export interface WireMessage {
  jsonrpc: "2.0";
  id?: string | number;
  method?: string;
  // biome-ignore lint/suspicious/noExplicitAny: wire messages are inspected freely in tests
  params?: any;
  // biome-ignore lint/suspicious/noExplicitAny: idem
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

export type { ExitInfo } from "./exitWithOutput.js";

export interface Session<C> {
  client: C;
  /** pid of the process the client spawned (the gateway, or the server when direct) */
  pid: number;
  /** the state dir given to the gateway (undefined for direct sessions) */
  stateDir: string | undefined;
  /** everything the process printed on stderr so far */
  stderr(): string;
  /** resolve with the first stderr line (from offset `from`) matching `re`; reject after `ms` */
  waitForStderr(re: RegExp, ms?: number, from?: number): Promise<string>;
  /** every message the client received, in order (responses, notifications, requests) */
  received(): WireMessage[];
  /** every message the client sent, in order (the v2 probe sibling's messages are not included) */
  sent(): WireMessage[];
  /** received notifications, optionally only one method */
  notifications(method?: string): WireMessage[];
  /** resolve with the first notification `method` received at index >= `from` of received() */
  waitForNotification(method: string, ms?: number, from?: number): Promise<WireMessage>;
  /** resolves when the spawned process has exited and its stderr was read to its end (bounded) */
  exited: Promise<ExitInfo>;
  /** send a signal to the spawned process */
  kill(signal?: NodeJS.Signals): void;
  /** close the client (stdin end, then SIGTERM, then SIGKILL), and remove a state dir we created */
  close(): Promise<void>;
}

export interface GatewayOptions {
  /** arguments after `run`, e.g. ["--label", "inv", "--", NODE, entry] */
  args: string[];
  cwd?: string;
  /** extra environment (over the SDK's minimal default: HOME, PATH, SHELL, TERM, USER, LOGNAME) */
  env?: Record<string, string>;
  /** state dir passed as --state-dir; default a fresh temp dir, removed on close() */
  stateDir?: string;
  /** connect (initialize or discover) timeout, default 20 s */
  connectTimeoutMs?: number;
  /** client capabilities to declare (e.g. { sampling: {} }); default none */
  capabilities?: Record<string, unknown>;
  /** called with the client before it connects, to install request handlers */
  setup?: (client: Client) => void;
  /** node's own flags for the gateway process (`--no-regexp-optimization`: NODE_OPTIONS refuses V8 flags) */
  nodeFlags?: string[];
  /** a command the gateway runs under (`prlimit --nofile=N:N --`); startGateway only */
  prefix?: string[];
}

export type Negotiation = "auto" | "pin" | "legacy";

export interface ModernGatewayOptions extends GatewayOptions {
  /** v2 client versionNegotiation: "auto" (default: probe, fall back to legacy), "pin" (2026-07-28 or fail), "legacy" */
  negotiation?: Negotiation;
  /** called with the v2 client before it connects, to install request handlers */
  modernSetup?: (client: ModernClient) => void;
}

const CLIENT_INFO = { name: "portcullis-test-client", version: "1.0.0" };
const MODERN_REVISION = "2026-07-28";

/** The minimal environment an MCP host gives a stdio server, plus `env`. */
export function hostEnv(env: Record<string, string> = {}): Record<string, string> {
  // The digest cache is shared by the suite (warm after the first gateway), outside $HOME.
  return {
    ...getDefaultEnvironment(),
    PORTCULLIS_CACHE_DIR: join(tmpdir(), "portcullis-test-cache"),
    // no desktop notifications from tests, unless a test sets its own notifier
    PORTCULLIS_NOTIFY: "0",
    // No console started on demand (test/console/ turns it back on where it is the subject).
    PORTCULLIS_NO_CONSOLE: "1",
    ...env,
  };
}

export function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`portcullis is not built (${CLI} missing): run npm run build`);
}

function gatewayArgs(stateDir: string, args: string[], nodeFlags: string[] = []): string[] {
  return [...nodeFlags, CLI, "run", "--state-dir", stateDir, ...args];
}

/** Just what both SDKs' stdio client transports share and what we instrument. */
interface StdioTransportLike {
  readonly stderr: Stream | null;
  readonly pid: number | null;
  // biome-ignore lint/suspicious/noExplicitAny: the two SDKs type messages differently
  onmessage?: (message: any, extra?: any) => void;
  start(): Promise<void>;
  // biome-ignore lint/suspicious/noExplicitAny: idem
  send(message: any, options?: any): Promise<void>;
}

interface Connectable {
  connect(transport: never, options?: { timeout?: number }): Promise<void>;
  close(): Promise<void>;
}

async function openSession<C extends Connectable>(
  client: C,
  transport: StdioTransportLike,
  label: string,
  stateDir: string | undefined,
  ownStateDir: boolean,
  connectTimeoutMs: number,
): Promise<Session<C>> {
  let stderrText = "";
  const received: WireMessage[] = [];
  const sent: WireMessage[] = [];
  // decoded as a stream: a chunk can end inside a character of several bytes (the transport's
  // copy is not set to an encoding here, the SDK owns it)
  const decoder = new StringDecoder("utf8");
  transport.stderr?.on("data", (chunk: Buffer | string) => {
    stderrText += typeof chunk === "string" ? chunk : decoder.write(chunk);
  });
  transport.onmessage = (message: WireMessage) => {
    received.push(message);
  };
  const send = transport.send.bind(transport);
  transport.send = (message: WireMessage, options?: unknown) => {
    sent.push(message);
    return send(message, options);
  };
  let resolveExit: (info: ExitInfo) => void = () => {};
  const exited = new Promise<ExitInfo>((resolve) => {
    resolveExit = resolve;
  });
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    const proc = (transport as unknown as { _process?: ChildProcess })._process;
    if (!proc) return;
    // stderrText is filled from the transport's copy of the child's stderr (a PassThrough), which
    // ends after the child's own pipe: both are waited for, so a test reading stderr() once this
    // resolved sees its last line
    const copy = transport.stderr;
    const outputs = copy && copy !== proc.stderr ? [...pipesOf(proc), copy as Readable] : pipesOf(proc);
    void exitWithOutput(proc, outputs).then(resolveExit);
  };

  const cleanup = () => {
    if (ownStateDir && stateDir) removeDir(stateDir);
  };
  try {
    await client.connect(transport as never, { timeout: connectTimeoutMs });
  } catch (error) {
    await client.close().catch(() => {});
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 1_000))]);
    cleanup();
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`${label}: connect failed: ${message}\n--- ${label} stderr ---\n${stderrText}`);
  }

  const pid = transport.pid ?? -1;
  const waitForStderr = async (re: RegExp, ms = 10_000, from = 0): Promise<string> => {
    try {
      return await waitFor(
        // only lines written whole: a chunk can end inside one ("pid=12" of "pid=12345")
        () => completeLines(stderrText.slice(from)).find((line) => re.test(line)),
        ms,
        `${label} stderr matching ${re}`,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}\n--- ${label} stderr ---\n${stderrText}`);
    }
  };
  const notifications = (method?: string) =>
    received.filter(
      (m) => m.method !== undefined && m.id === undefined && (method === undefined || m.method === method),
    );
  return {
    client,
    pid,
    stateDir,
    stderr: () => stderrText,
    waitForStderr,
    received: () => received,
    sent: () => sent,
    notifications,
    waitForNotification: (method, ms = 10_000, from = 0) =>
      waitFor(
        () => received.slice(from).find((m) => m.method === method && m.id === undefined),
        ms,
        `notification ${method} from ${label}`,
      ),
    exited,
    kill: (signal = "SIGTERM") => {
      if (pid > 0) process.kill(pid, signal);
    },
    close: async () => {
      try {
        await client.close();
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
      } finally {
        cleanup();
      }
    },
  };
}

function stateDirFor(options: GatewayOptions): { stateDir: string; own: boolean } {
  return options.stateDir
    ? { stateDir: options.stateDir, own: false }
    : { stateDir: newStateDir(), own: true };
}

/** The v1 SDK client, connected to `node dist/cli/main.cjs run --state-dir <dir> ...args`. */
export async function startGateway(options: GatewayOptions): Promise<Session<Client>> {
  assertBuilt();
  const { stateDir, own } = stateDirFor(options);
  const [command, ...prefixArgs] = [...(options.prefix ?? []), NODE];
  const transport = new StdioClientTransport({
    command: command!,
    args: [...prefixArgs, ...gatewayArgs(stateDir, options.args, options.nodeFlags)],
    env: hostEnv(options.env),
    cwd: options.cwd,
    stderr: "pipe",
  });
  const client = new Client(CLIENT_INFO, { capabilities: options.capabilities ?? {} });
  options.setup?.(client);
  return openSession(client, transport, "gateway", stateDir, own, options.connectTimeoutMs ?? 20_000);
}

/** The v1 SDK client, connected straight to a server (no gateway). */
export async function startDirect(
  command: string,
  args: string[],
  env: Record<string, string> = {},
  options: {
    cwd?: string;
    connectTimeoutMs?: number;
    capabilities?: Record<string, unknown>;
    setup?: (client: Client) => void;
  } = {},
): Promise<Session<Client>> {
  const transport = new StdioClientTransport({
    command,
    args,
    env: hostEnv(env),
    cwd: options.cwd,
    stderr: "pipe",
  });
  const client = new Client(CLIENT_INFO, { capabilities: options.capabilities ?? {} });
  options.setup?.(client);
  return openSession(client, transport, "server", undefined, false, options.connectTimeoutMs ?? 20_000);
}

/**
 * A v2 client and the v2 stdio transport's class, the package imported on first use: a handful
 * of files use it, and its import (≈ 0.25 s of CPU, zod included) would otherwise be paid by
 * each of the hundred files that load this helper.
 */
async function modernClient(negotiation: Negotiation = "auto", capabilities: Record<string, unknown> = {}) {
  const [{ Client }, { StdioClientTransport }] = await Promise.all([
    import("@modelcontextprotocol/client"),
    import("@modelcontextprotocol/client/stdio"),
  ]);
  const mode = negotiation === "pin" ? { pin: MODERN_REVISION } : negotiation;
  return {
    client: new Client(CLIENT_INFO, { capabilities, versionNegotiation: { mode } }),
    ModernTransport: StdioClientTransport,
  };
}

/** The v2 SDK client (2026-07-28 capable), connected to the gateway. */
export async function startModernGateway(options: ModernGatewayOptions): Promise<Session<ModernClient>> {
  assertBuilt();
  const { stateDir, own } = stateDirFor(options);
  const { client, ModernTransport } = await modernClient(options.negotiation, options.capabilities);
  const transport = new ModernTransport({
    command: NODE,
    args: gatewayArgs(stateDir, options.args),
    env: hostEnv(options.env),
    cwd: options.cwd,
    stderr: "pipe",
  });
  options.modernSetup?.(client);
  return openSession(client, transport, "gateway", stateDir, own, options.connectTimeoutMs ?? 20_000);
}

/** The v2 SDK client, connected straight to a server (no gateway). */
export async function startModernDirect(
  command: string,
  args: string[],
  env: Record<string, string> = {},
  options: { cwd?: string; connectTimeoutMs?: number; negotiation?: Negotiation } = {},
): Promise<Session<ModernClient>> {
  const { client, ModernTransport } = await modernClient(options.negotiation);
  const transport = new ModernTransport({
    command,
    args,
    env: hostEnv(env),
    cwd: options.cwd,
    stderr: "pipe",
  });
  return openSession(client, transport, "server", undefined, false, options.connectTimeoutMs ?? 20_000);
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Run another portcullis command to completion: `node dist/cli/main.cjs ...args`, with the state
 * dir given as PORTCULLIS_HOME (so no flag position is assumed), `input` written to stdin.
 */
export function runCli(
  args: string[],
  options: {
    stateDir?: string;
    env?: Record<string, string>;
    cwd?: string;
    input?: string | Buffer;
    timeoutMs?: number;
    /** run the child as this user (a test running as root, where file modes must bind) */
    uid?: number;
    gid?: number;
    /**
     * run it as an agent's subprocess or a CI job does: in a session of its own, with no
     * controlling terminal to ask a passphrase on (the environment has no passphrase file unless
     * `env` gives one)
     */
    noTerminal?: boolean;
    /** node's own flags for the command (NODE_OPTIONS refuses V8 flags) */
    nodeFlags?: string[];
  } = {},
): Promise<CliResult> {
  assertBuilt();
  const env = hostEnv({ ...(options.stateDir ? { PORTCULLIS_HOME: options.stateDir } : {}), ...options.env });
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [...(options.nodeFlags ?? []), CLI, ...args], {
      cwd: options.cwd,
      env,
      stdio: ["pipe", "pipe", "pipe"],
      uid: options.uid,
      gid: options.gid,
      detached: options.noTerminal === true,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`portcullis ${args.join(" ")}: timed out\n--- stderr ---\n${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    // a command that exits before reading its input closes the pipe: EPIPE is its business, and
    // its exit code and output say what happened (unhandled, it failed a whole test run)
    child.stdin.on("error", () => {});
    child.stdin.end(options.input ?? "");
  });
}

/**
 * The gateway in front of a revisioned fixture project (project.ts): label "inventory", the
 * project as working directory, its FIXTURE_* env, and `runArgs` before `--`.
 */
export function startInventory(
  project: Project,
  runArgs: string[] = [],
  options: {
    command?: string[];
    credentials?: boolean;
    stateDir?: string;
    env?: Record<string, string>;
  } = {},
): Promise<Session<Client>> {
  return startGateway({
    args: ["--label", "inventory", ...runArgs, "--", ...(options.command ?? project.command)],
    cwd: project.dir,
    env: { ...project.env, ...(options.credentials ? project.credentialEnv : {}), ...options.env },
    stateDir: options.stateDir,
  });
}
