// The egress proxy tunnels a CONNECT to any destination it is not told to refuse, this machine's
// included: a server may talk to a local service through it. A tunnel to the proxy itself,
// though, is one a server can nest: CONNECT to the proxy's own port, then CONNECT again inside
// the tunnel, and so on, each level two more sockets held by the gateway, all through one socket
// of the server's (checked by hand before the fix: 300 levels, one client socket, 602 more file
// descriptors in the gateway). The proxy judges where a tunnel leads by the address it actually
// connected to, after the name was resolved: every spelling of its own address (a name the
// machine resolves locally, an IPv4 number in any notation, 0.0.0.0, an IPv4-mapped IPv6
// address) gets 508 Loop Detected and a "refused" record; a tunnel to another local port still
// works. No name is resolved over the network: numeric forms are read by the resolver itself,
// localhost and the machine's own name come from /etc/hosts (only when it lists them).
import { readFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EgressProxy, type EgressRecord, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

const quiet = { info() {}, warn() {}, debug() {}, status() {} };

let stateDir: string;
let proxy: EgressProxy;
let echo: Server;
const records: EgressRecord[] = [];

beforeAll(async () => {
  stateDir = newStateDir();
  proxy = await startEgressProxy({
    stateDir,
    credentials: [],
    mode: "record",
    calls: () => ({ epoch: null, inFlight: [] }),
    onRecord: (r) => records.push(r),
    log: quiet,
  });
  // another local service: what a tunnel to this machine is still for
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
});
afterAll(async () => {
  await proxy.close();
  await new Promise<void>((r) => echo.close(() => r()));
  removeDir(stateDir);
});

/** One socket to the proxy; `send` writes and waits until `until` matches all that came back. */
async function client(): Promise<{ send(text: string, until: RegExp): Promise<string>; s: Socket }> {
  const s = connect(proxy.port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    s.once("connect", () => resolve());
    s.once("error", reject);
  });
  let got = "";
  s.on("data", (c: Buffer) => {
    got += c.toString("latin1");
  });
  s.on("error", () => {});
  return {
    s,
    send: (text, until) =>
      new Promise((resolve) => {
        const check = () => {
          if (until.test(got) || s.destroyed || s.readableEnded) resolve(got);
          else setTimeout(check, 5);
        };
        s.once("close", () => resolve(got));
        s.write(text);
        check();
      }),
  };
}

const connectLine = (authority: string) => `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`;
const STATUS = /^HTTP\/1\.1 (\d{3})/;

/** The machine's own name, when /etc/hosts gives it a loopback address (never a DNS query). */
const ownName = (() => {
  try {
    const listed = readFileSync("/etc/hosts", "utf8")
      .split("\n")
      .some((l) => /^\s*127\./.test(l) && l.replace(/#.*/, "").split(/\s+/).slice(1).includes(hostname()));
    return listed ? [hostname()] : [];
  } catch {
    return [];
  }
})();

describe("a tunnel through the egress proxy to the proxy itself", () => {
  it("is refused with 508 in every spelling of its address; nothing nests", async () => {
    const port = proxy.port;
    const spellings = [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `LOCALHOST.:${port}`,
      `127.1:${port}`,
      `2130706433:${port}`,
      `0x7f000001:${port}`,
      `0177.0.0.1:${port}`,
      `0.0.0.0:${port}`,
      `[::ffff:127.0.0.1]:${port}`,
      `[::ffff:7f00:1]:${port}`,
      ...ownName.map((n) => `${n}:${port}`),
    ];
    for (const authority of spellings) {
      const c = await client();
      const answer = await c.send(connectLine(authority), /\r\n\r\n/);
      c.s.destroy();
      expect(STATUS.exec(answer)?.[1], `${authority}: ${answer.slice(0, 120)}`).toBe("508");
      expect(answer, authority).toMatch(/this egress proxy itself/);
      expect(records.at(-1), authority).toMatchObject({ outcome: "refused", status: 508, method: "CONNECT" });
    }
  });

  it("a tunnel to another port of this machine still works (the control)", async () => {
    const port = (echo.address() as { port: number }).port;
    const c = await client();
    const answer = await c.send(connectLine(`localhost:${port}`), /\r\n\r\n/);
    expect(STATUS.exec(answer)?.[1]).toBe("200");
    const echoed = await c.send("ping-through-the-tunnel", /ping-through-the-tunnel/);
    expect(echoed).toContain("ping-through-the-tunnel");
    c.s.destroy();
  });
});
