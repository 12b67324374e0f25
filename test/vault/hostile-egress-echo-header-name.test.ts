// A hostile HTTP upstream that echoes the credential it was sent as part of a header's name, in an
// interim answer (103) and in the final one, to a request sent to the proxy in absolute form. Such
// a name is a token (letters, digits, '-'), as most keys are. In absolute form Node's client reads
// the answer and the proxy writes it again from what it read: the status text and every header
// value had the released value taken out, the names were written as read, so the server got the
// key (the promise: "in the status line, every header"). What must hold: no byte the client reads
// holds the value, the upstream got it, the answer's other headers and body are given on. In a
// tunnel the head is scrubbed as bytes, names included (checked here too). In-process proxy and
// vault holder, a real TCP upstream; this process is the client, over real sockets.
import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createCa } from "../../src/vault/egress/certs.js";
import { type CallInFlight, type EgressProxy, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { holderSocketPath, runHolder } from "../../src/vault/holder.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

const SECRET = "sk-name-3e9d27c04b";
const PLACEHOLDER = "portcullis-placeholder:api";
const quiet = { info() {}, warn() {}, debug() {}, status() {} };
/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 5000;

let stateDir: string;
let proxy: EgressProxy;
let holder: { stop(reason: "locked"): void };
let upstream: Server;
let host: string;
const sockets = new Set<Socket>();
/** the Authorization each request reached the upstream with */
const got: string[] = [];
/** the calls in flight: none, or one whose scope lets the proxy release the value */
const window: { epoch: string; inFlight: CallInFlight[] } = { epoch: "E1", inFlight: [] };

/**
 * The upstream's answer: the request's token as part of a header's name, in a 103 and in the 200
 * (and in a value beside it, which was always scrubbed).
 */
function answer(_path: string, token: string): string {
  return (
    `HTTP/1.1 103 Early Hints\r\nX-Hint-${token}: 1\r\nX-Hint: ${token}\r\n\r\n` +
    `HTTP/1.1 200 OK\r\nX-Key-${token}: 1\r\nX-Key: ${token}\r\nContent-Length: 2\r\n\r\nok`
  );
}

beforeAll(async () => {
  stateDir = newStateDir();
  upstream = createServer((s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    let buf = "";
    s.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      for (let end = buf.indexOf("\r\n\r\n"); end >= 0; end = buf.indexOf("\r\n\r\n")) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        const token = /\r\nauthorization: Bearer ([^\r]*)/i.exec(head)?.[1] ?? "";
        got.push(token);
        s.write(answer(/^\S+ (\S+)/.exec(head)?.[1] ?? "/", token));
      }
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  holder = await runHolder({
    socketPath: holderSocketPath(stateDir),
    until: new Date(Date.now() + 3600_000),
    secrets: new Map([["api", { value: SECRET, deliver: "http", hosts: [host] }]]),
    ca: await createCa("interim local CA"),
  });
  proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host] }],
    mode: "record",
    calls: () => window,
    timeoutMs: BOUND,
    onRecord: () => {},
    log: quiet,
  });
});

afterAll(async () => {
  await proxy?.close();
  holder?.stop("locked");
  for (const s of sockets) s.destroy();
  upstream?.close();
  removeDir(stateDir);
});

/**
 * Everything the proxy writes back to `text`, read as bytes until it closes; `then` is written
 * once the first answer's head came (a CONNECT's 200).
 */
async function raw(text: string, then?: string): Promise<string> {
  const s = connect(proxy.port, "127.0.0.1");
  s.on("error", () => {});
  let read = "";
  s.on("data", (d: Buffer) => {
    read += d.toString("latin1");
  });
  await once(s, "connect");
  s.write(text);
  if (then !== undefined) {
    await waitFor(() => read.includes("\r\n\r\n"), BOUND, "the CONNECT's answer");
    s.write(then);
  }
  try {
    await waitFor(() => s.destroyed || s.readableEnded || null, BOUND, "the proxy's close");
  } finally {
    s.destroy();
  }
  return read;
}

for (const how of ["absolute", "tunnel"] as const)
  it(`${how}: the value echoed in a header's name, in a 103 and in the 200, never reaches the client`, async () => {
    window.inFlight = [{ callId: "1", epoch: "E1", scopes: ["api"], key: "k1" }];
    try {
      const target = how === "absolute" ? `http://${host}/page` : "/page";
      const get = `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`;
      const wire = await (how === "absolute"
        ? raw(get)
        : raw(`CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`, get));
      // the upstream got the value: the proxy released it
      expect(got.at(-1)).toBe(SECRET);
      expect(wire).not.toContain(SECRET);
      expect(wire).toMatch(/HTTP\/1\.1 103 Early Hints\r\n/);
      expect(wire).toContain(`\r\nX-Hint: ${PLACEHOLDER}\r\n`);
      // (absolute form gives a scrubbed body on in chunks of its own)
      expect(wire).toMatch(/HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n(ok|2\r\nok\r\n0\r\n\r\n)$/);
      expect(wire).toContain(`\r\nX-Key: ${PLACEHOLDER}\r\n`);
    } finally {
      window.inFlight = [];
    }
  });
