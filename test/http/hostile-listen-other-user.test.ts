// `run --listen 127.0.0.1:PORT --no-auth`: loopback is this machine, not this user. Without a
// token, any local user's process could connect and call the tools with this user's servers and
// credentials. On Linux the front reads the kernel's socket table as it accepts each connection
// and closes, unread, one whose other end is not listed as a live socket of its own user: another
// user's, or one that wrote its request and closed before the front accepted it (nobody left to
// check). Spawning another user's process (nobody, 65534) needs root, and the table is Linux's.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { NOBODY, ROOT_ON_LINUX, scriptOutputAs } from "../helpers/otherUser.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { initializeBody, raw } from "./raw.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const MODERN_META = modernMeta({}, { name: "raw", version: "1" });
const modernCall = (message: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: { name: "echo", arguments: { message }, _meta: MODERN_META },
  });

/** A whole HTTP/1.1 POST to /mcp of the listener, as bytes a raw socket writes. */
function post(l: Listener, body: string, extra: Record<string, string> = {}): string {
  const headers: Record<string, string> = {
    host: new URL(l.url).host,
    accept: "application/json, text/event-stream",
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    ...extra,
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  return `POST /mcp HTTP/1.1\r\n${head}\r\n${body}`;
}

/**
 * In a process of `nobody`: each request on its own connection to the listener; what came back
 * on each. `closeAtOnce`: write the request and close the socket without waiting for an answer.
 */
function asNobody(l: Listener, requests: string[], closeAtOnce = false): Promise<string[]> {
  const host = new URL(l.url).hostname.replace(/^\[|\]$/g, "");
  const script = `
    const net = require("node:net");
    const ask = (text) => new Promise((resolve) => {
      const s = net.connect(${l.port}, ${JSON.stringify(host)});
      let got = "";
      s.on("data", (c) => { got += c.toString("latin1"); if (/"jsonrpc"/.test(got)) s.end(); });
      s.on("error", () => resolve(got));
      s.on("close", () => resolve(got));
      s.setTimeout(5000, () => s.destroy());
      s.write(text, () => { if (${closeAtOnce}) s.destroy(); });
    });
    (async () => {
      const out = [];
      for (const r of ${JSON.stringify(requests)}) out.push(await ask(r));
      process.stdout.write(JSON.stringify(out));
    })();
  `;
  return scriptOutputAs<string[]>(NOBODY, script);
}

interface NoAuthListener {
  l: Listener;
  /** the methods the server processes received, in order */
  methods(): string[];
  /** what they received, as logged */
  received(): string;
}

async function noAuthListener(address = "127.0.0.1:0"): Promise<NoAuthListener> {
  const methodLog = join(tempDir("portcullis-other-user-"), "methods.jsonl");
  const l = await startListener(fixtureCommand("lenient"), {
    address,
    args: ["--no-auth", "--approval", "none"],
    env: { FIXTURE_METHOD_LOG: methodLog },
  });
  cleanup.push(() => l.close());
  const received = () => (existsSync(methodLog) ? readFileSync(methodLog, "utf8") : "");
  const methods = () =>
    received()
      .split("\n")
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { method: string }).method);
  return { l, methods, received };
}

function runCount(stateDir: string): number {
  const db = openStore(stateDir);
  try {
    return (db.prepare("SELECT count(*) AS n FROM runs").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** The user's own client: a 2026-07-28 call, answered; the only call any server received. */
async function ownCallWorks({ l, methods, received }: NoAuthListener): Promise<void> {
  const own = await raw(l, {
    host: new URL(l.url).hostname.replace(/^\[|\]$/g, ""),
    headers: l.headers({ "mcp-protocol-version": "2026-07-28" }),
    body: modernCall("from-the-user"),
  });
  expect(own.status, own.body).toBe(200);
  expect(own.body).toContain("from-the-user");
  expect(methods().filter((m) => m === "tools/call")).toHaveLength(1);
  expect(received()).toContain("from-the-user");
  expect(received()).not.toContain("from-nobody");
  expect(runCount(l.stateDir)).toBe(1);
}

describe("run --listen --no-auth and another user's process", () => {
  it.skipIf(!ROOT_ON_LINUX).each(["127.0.0.1:0", "[::1]:0"])(
    "another user's connection is closed unread: no session, no server started, no call; the gateway names the uid; the user's own client works (--listen %s)",
    async (address) => {
      const front = await noAuthListener(address);
      const { l, methods } = front;
      const answers = await asNobody(l, [
        post(l, initializeBody()),
        post(l, modernCall("from-nobody"), { "mcp-protocol-version": "2026-07-28" }),
      ]);
      expect(answers).toEqual(["", ""]);
      // logged before the close, but the close reaches the test on a socket, the line on a pipe
      const refused =
        /http: closed a connection unread: the connecting process is another user's \(uid 65534\)/;
      await waitFor(() => refused.test(l.stderr()), 10_000, "the refusal line");
      // nothing of it reached a server, and no run was recorded for it
      expect(methods()).toEqual([]);
      expect(runCount(l.stateDir)).toBe(0);

      await ownCallWorks(front);
    },
  );

  it.skipIf(!ROOT_ON_LINUX)(
    "another user's process connecting in a loop is refused every time, and the log says so once, not once a connection",
    async () => {
      const front = await noAuthListener();
      const { l, methods } = front;
      const call = post(l, modernCall("from-nobody"), { "mcp-protocol-version": "2026-07-28" });
      const answers = await asNobody(
        l,
        Array.from({ length: 40 }, () => call),
      );
      expect(answers).toEqual(Array.from({ length: 40 }, () => ""));
      expect(methods()).toEqual([]);
      expect(l.stderr().match(/http: closed a connection unread/g)).toHaveLength(1);
      await ownCallWorks(front);
    },
  );

  it.skipIf(!ROOT_ON_LINUX)(
    "a request whose sender closed before the gateway accepted the connection is not run: its owner cannot be read",
    async () => {
      const front = await noAuthListener();
      const { l, methods } = front;
      // The gateway stopped, nobody's process connects (the kernel completes the handshake and
      // queues the connection), writes a call, closes and exits; then the gateway goes on and
      // accepts a connection whose other end is listed with no owner.
      l.proc.kill("SIGSTOP");
      let answers: string[];
      try {
        answers = await asNobody(
          l,
          [post(l, modernCall("from-nobody"), { "mcp-protocol-version": "2026-07-28" })],
          true,
        );
      } finally {
        l.proc.kill("SIGCONT");
      }
      expect(answers).toEqual([""]);
      // the gateway took the connection: refused it, or opened a session for it
      await waitFor(
        () => /closed a connection unread|http session /.test(l.stderr()) || undefined,
        10_000,
        "the gateway to take the connection",
      );
      expect(l.stderr()).not.toMatch(/http session /);
      expect(l.stderr()).toMatch(
        /http: closed a connection unread: the kernel does not list the connecting process's socket as a live one of this user \(uid 0\)/,
      );
      expect(methods()).toEqual([]);
      expect(runCount(l.stateDir)).toBe(0);

      await ownCallWorks(front);
    },
  );
});
