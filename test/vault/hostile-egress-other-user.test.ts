// The egress proxy listens on 127.0.0.1: this machine, not this user. Any local user's process
// can connect to it, and one of another user's that sent a request naming a declared host with
// the placeholder while a call runs would have the user's credential put into it, the upstream's
// answer coming back to it; a tunnel through it also comes from the user's gateway process. The
// proxy is for the gateway's server, which runs as the user: a connection whose other end the
// kernel lists as another user's is closed before a byte is read. Spawning another user's
// process (nobody, 65534) needs root, and the kernel's socket table is Linux's.
import { spawnSync } from "node:child_process";
import { type Server as HttpServer, createServer as httpServer } from "node:http";
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EgressProxy, type EgressRecord, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { NOBODY, ROOT_ON_LINUX, scriptOutputAs } from "../helpers/otherUser.js";
import { NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const warnings: string[] = [];
const log = { info() {}, warn: (l: string) => void warnings.push(l), debug() {}, status() {} };

let stateDir: string;
let proxy: EgressProxy;
let echo: Server;
let upstream: HttpServer;
const upstreamSaw: string[] = [];
const records: EgressRecord[] = [];

beforeAll(async () => {
  stateDir = newStateDir();
  proxy = await startEgressProxy({
    stateDir,
    credentials: [],
    mode: "record",
    calls: () => ({ epoch: null, inFlight: [] }),
    onRecord: (r) => records.push(r),
    log,
  });
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
  upstream = httpServer((req, res) => {
    upstreamSaw.push(`${req.method} ${req.url}`);
    res.end("upstream-answer");
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
});
afterAll(async () => {
  await proxy.close();
  await new Promise<void>((r) => echo.close(() => r()));
  await new Promise<void>((r) => upstream.close(() => r()));
  removeDir(stateDir);
});

/**
 * In a process of `uid` (null: this one's user): a CONNECT to the echo server then a line through
 * the tunnel, and an absolute-form GET to the upstream, each on its own connection to the proxy.
 * What came back on each.
 */
function tryProxy(uid: number | null): Promise<{ tunnel: string; get: string }> {
  const script = `
    const net = require("node:net");
    const ask = (text, then) => new Promise((resolve) => {
      const s = net.connect(${proxy.port}, "127.0.0.1");
      let got = "";
      s.on("data", (c) => {
        got += c.toString("latin1");
        if (then && /\\r\\n\\r\\n/.test(got) && !s.sent) { s.sent = true; s.write(then); }
        if (/through-the-tunnel|upstream-answer/.test(got)) s.end();
      });
      s.on("error", () => resolve(got));
      s.on("close", () => resolve(got));
      s.setTimeout(5000, () => s.destroy());
      s.write(text);
    });
    (async () => {
      const tunnel = await ask("CONNECT 127.0.0.1:${(echo.address() as { port: number }).port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n", "through-the-tunnel");
      const up = "127.0.0.1:${(upstream.address() as { port: number }).port}";
      const get = await ask("GET http://" + up + "/secret-path HTTP/1.1\\r\\nHost: " + up + "\\r\\nConnection: close\\r\\n\\r\\n");
      process.stdout.write(JSON.stringify({ tunnel, get }));
    })();
  `;
  return scriptOutputAs(uid, script);
}

describe("the egress proxy and another user's process", () => {
  it.skipIf(!ROOT_ON_LINUX)(
    "another user's connection is closed unread: no tunnel, nothing forwarded; the user's own still works",
    async () => {
      const nobody = await tryProxy(NOBODY);
      expect(nobody.tunnel).not.toMatch(/200 Connection Established/);
      expect(nobody.tunnel).not.toContain("through-the-tunnel");
      expect(nobody.get).toBe("");
      expect(upstreamSaw).toEqual([]);
      expect(records).toEqual([]);
      expect(warnings.join("\n")).toMatch(/closed a connection from another user's process \(uid 65534\)/);

      // the control: the same requests from a process of the proxy's own user go through
      const own = await tryProxy(null);
      expect(own.tunnel).toMatch(/200 Connection Established/);
      expect(own.tunnel).toContain("through-the-tunnel");
      expect(own.get).toContain("upstream-answer");
      expect(upstreamSaw).toEqual(["GET /secret-path"]);
    },
  );

  it.skipIf(!ROOT_ON_LINUX)(
    "a request whose sender closed before the proxy accepted the connection is not read: no owner is listed for it",
    async () => {
      const recorded = records.length;
      const up = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
      // spawnSync holds this process, the proxy's, still: nobody's process connects (the kernel
      // completes the handshake and queues the connection), writes its request, closes and exits
      // before the proxy can accept; the proxy then takes a connection whose end has no owner listed
      const sent = spawnSync(
        NODE,
        [
          "-e",
          `const s = require("node:net").connect(${proxy.port}, "127.0.0.1", () => s.write(${JSON.stringify(
            `GET http://${up}/closed-before-accept HTTP/1.1\r\nHost: ${up}\r\nConnection: close\r\n\r\n`,
          )}, () => { s.destroy(); process.stdout.write("sent"); }));`,
        ],
        { uid: NOBODY, gid: NOBODY, encoding: "utf8" },
      );
      expect(sent.stdout).toBe("sent");
      // the proxy took it: closed unread, or read and forwarded
      await waitFor(
        () =>
          /closed a connection whose process the kernel does not list/.test(warnings.join("\n")) ||
          upstreamSaw.includes("GET /closed-before-accept") ||
          records.length > recorded ||
          undefined,
        10_000,
        "the proxy to take the connection",
      );
      expect(upstreamSaw).not.toContain("GET /closed-before-accept");
      expect(records.length).toBe(recorded);
      expect(warnings.join("\n")).toMatch(
        /closed a connection whose process the kernel does not list as this user's/,
      );
    },
  );
});
