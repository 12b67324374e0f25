// A console in front of a state directory, and the ways a test reaches it: a real browser
// (test/helpers/browser.ts), or plain HTTP (node:http, so Host and Origin can be set freely).
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { type Agent, request } from "node:http";
import { connect, createServer as createNetServer, type Server } from "node:net";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { expect } from "vitest";
import { getRequest } from "../../src/approval/requests.js";
import { readConsoleAddress } from "../../src/console/address.js";
import { openStoreToRead } from "../../src/store/db.js";
import { waitForPending } from "../helpers/approvals.js";
import { capture } from "../helpers/exitWithOutput.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, startGateway } from "../helpers/gateway.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

export interface RunningConsole {
  url: string;
  pid: number;
  /** its exit code, once it ended (by `stop` or on its own) */
  exited: Promise<number | null>;
  /** what it wrote on stdout and stderr so far */
  output(): string;
  stop(): Promise<void>;
}

/**
 * `portcullis console --no-open --state-dir DIR …extra`, waited for until its address is
 * published; under `prefix` (`prlimit --nofile=N:N --`) when given; without `--no-open` when
 * `opensBrowser` (the test of the opener).
 */
export async function startConsoleProcess(
  stateDir: string,
  extra: string[] = [],
  cwd?: string,
  env: Record<string, string> = {},
  prefix: string[] = [],
  opensBrowser = false,
): Promise<RunningConsole> {
  const open = opensBrowser ? [] : ["--no-open"];
  const argv = [...prefix, NODE, CLI, "console", ...open, "--state-dir", stateDir, ...extra];
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), {
    env: hostEnv(env),
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  // exited once its output is read to the end too: a test reads output() once it has exited
  const output = capture(child);
  const exited = output.exited.then(({ code }) => code);
  const address = await waitFor(
    () => {
      const a = readConsoleAddress(stateDir);
      return a && a.pid === child.pid ? a : null;
    },
    15_000,
    `the console to start (${output.both()})`,
  );
  return {
    url: address.url,
    pid: child.pid!,
    exited,
    output: output.both,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/** The console a gateway started on demand, waited for; stopped by `stopConsoleOf`. */
export async function consoleOf(stateDir: string): Promise<string> {
  return (await waitFor(() => readConsoleAddress(stateDir), 20_000, "the on-demand console")).url;
}

export async function stopConsoleOf(stateDir: string): Promise<void> {
  const a = readConsoleAddress(stateDir);
  if (!a) return;
  try {
    process.kill(a.pid, "SIGTERM");
  } catch {
    return;
  }
  await waitFor(() => readConsoleAddress(stateDir) === null, 10_000, "the console to stop");
}

/** A catalog fixture's tools file; the gateway in front of it asks a human for every tool. */
export function catalogFile(dir: string, tools: unknown[]): string {
  const file = join(dir, "tools.json");
  writeFileSync(file, JSON.stringify(tools));
  return file;
}

export const DEPLOY_TOOL = {
  name: "deploy",
  description: "Deploys the current branch.",
  inputSchema: {
    type: "object",
    properties: {
      target: { type: "string", enum: ["preview", "production"], default: "preview" },
      note: { type: "string" },
    },
    additionalProperties: false,
  },
};

export async function gatewayFor(
  stateDir: string,
  toolsFile: string,
  extra: string[] = [],
  env: Record<string, string> = {},
) {
  return startGateway({
    stateDir,
    args: ["--label", "shop", "--approval-timeout", "60000", ...extra, "--", NODE, FIXTURES.catalog],
    env: { FIXTURE_CATALOG: toolsFile, PORTCULLIS_NO_CONSOLE: "0", ...env },
  });
}

/**
 * A gateway before the catalog fixture serving `tools`, its tools listed, with the console it
 * starts on demand: what the browser tests of a review card start from. Its state and catalog
 * directories, the console and the gateway are ended by the functions pushed on `cleanup`.
 */
export async function consoleGateway(cleanup: (() => Promise<void> | void)[], tools: unknown[]) {
  const stateDir = newStateDir();
  const dir = tempDir("portcullis-console-tools-");
  cleanup.push(() => {
    removeDir(dir);
    removeDir(stateDir);
  });
  cleanup.push(() => stopConsoleOf(stateDir));
  const gw = await gatewayFor(stateDir, catalogFile(dir, tools));
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { stateDir, gw };
}

/** A tool that moves money, with a payee and an amount: what a review card must show exactly. */
export const TRANSFER_TOOL = {
  name: "transfer",
  description: "Sends money.",
  inputSchema: {
    type: "object",
    properties: { to: { type: "string" }, amount: { type: "number" } },
  },
};

/** Logs in through the login page, as a person would. */
export async function loginWithBrowser(page: Page, url: string, passphrase = TEST_PASSPHRASE): Promise<void> {
  await page.goto(url);
  await page.getByTestId("login-passphrase").fill(passphrase);
  await page.getByTestId("login-submit").click();
  await page.waitForURL((u) => !u.pathname.startsWith("/login"));
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * One HTTP request with exactly the headers given (Host included). `beforeBody`: the request asks
 * `Expect: 100-continue`, and its body is sent only once the console has taken the request in
 * (its checks on arrival made) and `beforeBody` has run.
 */
export function raw(
  url: string,
  opts: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    beforeBody?: () => void | Promise<void>;
    /** the agent whose connection carries it (a keep-alive one made before a flood) */
    agent?: Agent;
  } = {},
): Promise<RawResponse> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname.replace(/^\[(.*)\]$/, "$1"), // [::1] in a URL, ::1 to connect
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: opts.method ?? "GET",
        headers: { Host: u.host, ...opts.headers, ...(opts.beforeBody ? { Expect: "100-continue" } : {}) },
        setHost: false,
        ...(opts.agent ? { agent: opts.agent } : {}),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d) => {
          body += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    const before = opts.beforeBody;
    if (!before) return void req.end(opts.body);
    req.flushHeaders();
    req.once("continue", () => {
      Promise.resolve(before()).then(() => req.end(opts.body), reject);
    });
  });
}

/** One request of `pipelined`: its headers exactly as given (Host too; the URL's by default). */
export interface PipelinedRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * `requests` written on one connection in one write (HTTP/1.1 pipelining): their answers (status
 * and body), in order. node hands the console every request of the write in the order sent, and the console's
 * handler takes each the same way up to the passphrase check (no wait but its body's reading, in
 * arrival order), so the checks run in the order sent, the later one right after the earlier
 * one's failure is counted. A test of what a failure makes the next attempt do (the throttle's
 * wait after the sixth) sends the two so, without racing the throttle's clock.
 */
export function pipelined(
  url: string,
  requests: PipelinedRequest[],
): Promise<{ status: number; body: string }[]> {
  const u = new URL(url);
  const text = requests
    .map((r, i) => {
      const body = Buffer.from(r.body ?? "", "utf8");
      const headers: Record<string, string> = {
        Host: u.host,
        ...r.headers,
        "Content-Length": String(body.length),
        ...(i === requests.length - 1 ? { Connection: "close" } : {}),
      };
      const head = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("");
      return `${r.method ?? "POST"} ${r.path} HTTP/1.1\r\n${head}\r\n${body.toString("utf8")}`;
    })
    .join("");
  return new Promise((resolve, reject) => {
    const socket = connect({ host: u.hostname.replace(/^\[(.*)\]$/, "$1"), port: Number(u.port) });
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("end", () => {
      try {
        resolve(responses(Buffer.concat(chunks), requests.length));
      } catch (e) {
        reject(e);
      }
    });
    socket.write(text);
  });
}

/** `count` responses one after the other (each with a Content-Length): status and body. */
function responses(all: Buffer, count: number): { status: number; body: string }[] {
  const out: { status: number; body: string }[] = [];
  let at = 0;
  while (out.length < count) {
    const end = all.indexOf("\r\n\r\n", at);
    if (end < 0) throw new Error(`${out.length} of ${count} responses came: ${all.subarray(at).toString()}`);
    const head = all.subarray(at, end).toString("latin1");
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(head);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!status || !length) throw new Error(`not a response with a Content-Length: ${head}`);
    const bodyEnd = end + 4 + Number(length[1]);
    out.push({ status: Number(status[1]), body: all.subarray(end + 4, bodyEnd).toString("utf8") });
    at = bodyEnd;
  }
  return out;
}

export function cookiePairs(set: string | string[] | undefined): string[] {
  return (Array.isArray(set) ? set : set ? [set] : []).map((c) => c.split(";")[0]!);
}

export interface HttpSession {
  /** the Cookie header value of the session */
  cookie: string;
  /** the session's CSRF token, read from a page */
  csrf: string;
  /** the proof key handed over with the login's answer (null when the console holds no proof) */
  proofKey: string | null;
}

/** The digest of the review a request page's decision form shows (sent back with the decision). */
export function reviewedIn(page: string): string {
  const m = /name="reviewed" value="([^"]+)"/.exec(page);
  if (!m) throw new Error(`no decision form with a reviewed digest in the page:\n${page.slice(0, 500)}`);
  return m[1]!;
}

/** The proof key a page hands over to the console's script, if it carries one. */
export function handedProofKey(body: string): string | null {
  return /<meta name="portcullis-proof" content="([^"]+)"/.exec(body)?.[1] ?? null;
}

/** Logs in over plain HTTP: the login form's token and cookie, then the passphrase. */
export async function httpLogin(base: string, passphrase = TEST_PASSPHRASE): Promise<HttpSession> {
  const form = await raw(`${base}/login`);
  const loginToken = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
  const loginCookie = cookiePairs(form.headers["set-cookie"]).join("; ");
  const r = await raw(`${base}/login`, {
    method: "POST",
    headers: {
      Origin: base,
      Cookie: loginCookie,
      "Content-Type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ csrf: loginToken, passphrase }).toString(),
  });
  // A held proof's key comes in a page that hands it to the script; none held: a plain redirect.
  expect([200, 303], r.body).toContain(r.status);
  const proofKey = r.status === 200 ? handedProofKey(r.body) : null;
  if (r.status === 200) expect(proofKey, r.body).not.toBeNull();
  const cookie = cookiePairs(r.headers["set-cookie"]).find((c) => c.startsWith("portcullis_session_"))!;
  const home = await raw(`${base}/`, { headers: { Cookie: cookie } });
  expect(handedProofKey(home.body)).toBeNull();
  const csrf = /name="csrf" value="([^"]+)"/.exec(home.body)![1]!;
  return { cookie, csrf, proofKey };
}

/** A form POST as the console's own page would send it (Origin set), with the given fields. */
export function post(
  base: string,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return raw(`${base}${path}`, {
    method: "POST",
    headers: { Origin: base, "Content-Type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

/**
 * A plain TCP listener on host:port (0: any free port), or the bind's error code. Tests use it
 * to hold [::1]:PORT as another process would, and to see whether the console holds it.
 */
export function bindLoopback(host: string, port: number): Promise<Server | string> {
  return new Promise((resolve) => {
    const server = createNetServer();
    server.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? String(e)));
    server.listen({ host, port, ipv6Only: host === "::1" }, () => resolve(server));
  });
}

/** Whether this machine has an IPv6 loopback to bind (some containers do not). */
export async function hasIpv6Loopback(): Promise<boolean> {
  const s = await bindLoopback("::1", 0);
  if (typeof s === "string") return false;
  await new Promise((r) => s.close(r));
  return true;
}

/** An approval request's state as the store holds it now (undefined: no such request). */
export function requestState(stateDir: string, id: string): string | undefined {
  const db = openStoreToRead(stateDir);
  try {
    return getRequest(db, id)?.state;
  } finally {
    db.close();
  }
}

/**
 * The shop fixture's deploy tool behind a per-call gateway (its own console off) and a console
 * process on the same state directory, as the tests of forged decisions use them; `end` stops
 * both and removes their directories.
 */
export async function perCallShop(prefix: string, consoleArgs: string[] = [], consoleCwd?: string) {
  const stateDir = newStateDir();
  const dir = tempDir(prefix);
  const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]), ["--approval", "per-call"], {
    PORTCULLIS_NO_CONSOLE: "1",
  });
  const console_ = await startConsoleProcess(stateDir, consoleArgs, consoleCwd);
  const end = async () => {
    await console_.stop();
    await gw.close();
    removeDir(dir);
    removeDir(stateDir);
  };
  return { stateDir, gw, console_, end };
}

/** The screen the layout tests read a card in: "in view" means inside it. */
export const CARD_VIEWPORT = { width: 1400, height: 1000 };

/**
 * The first pending request of `stateDir`, its card opened in `page` at CARD_VIEWPORT after the
 * human logged in there: what the browser tests of a card's layout start from.
 */
export async function openFirstCard(page: Page, stateDir: string) {
  const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request");
  await page.setViewportSize(CARD_VIEWPORT);
  await loginWithBrowser(page, `${await consoleOf(stateDir)}/requests/${req.request}`);
  const card = page.getByTestId("pending-request");
  await card.waitFor();
  return { req, card, viewport: CARD_VIEWPORT };
}
