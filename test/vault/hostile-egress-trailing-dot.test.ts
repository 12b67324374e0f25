// A name's trailing dot (`api.example.test.`, the fully qualified spelling of api.example.test)
// through a real gateway under `"egress": "declared-only"`, while one of its calls is granted and
// in flight. The proxy matches, dials, records and mints a leaf for the name without the dot; the
// request it forwarded kept the dot in its Host (and in an absolute target), so an upstream that
// picks its site by the name as written (a CDN, a virtual host) could pick another site than the
// one matched, or none, for a request with the credential in it. Now the request names the site
// as the proxy matched it, in a CONNECT tunnel and in absolute form; a second dot or another name
// is still refused. No DNS: the gateway runs with a preload resolving the test's name to
// 127.0.0.1, where a plain TCP upstream records every byte it gets.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import {
  approvedCall,
  egressKit,
  exchange,
  nodeServer,
  PLACEHOLDER,
  proxyPort,
  type RawUpstream,
  rawUpstream,
  SECRET,
} from "./egress-kit.js";

const NAME = "api.example.test";
const k = egressKit();
let stateDir: string;
let port: number;
let front: number;
/** the upstream that fronts other sites: it records every byte it gets */
let upstream: RawUpstream;
let endCall: () => Promise<void>;

/** A --require preload: NAME (with or without its dot) resolves to 127.0.0.1. */
function resolverPreload(): string {
  const file = join(tempDir("portcullis-dns-"), "resolve.cjs");
  writeFileSync(
    file,
    `const dns = require("node:dns");
const real = dns.lookup;
dns.lookup = function (host, options, callback) {
  if (typeof options === "function") { callback = options; options = {}; }
  if (typeof options === "number") options = { family: options };
  if (String(host).toLowerCase().replace(/\\.$/, "") === ${JSON.stringify(NAME)}) {
    const address = { address: "127.0.0.1", family: 4 };
    return process.nextTick(() => (options && options.all ? callback(null, [address]) : callback(null, "127.0.0.1", 4)));
  }
  return real.call(dns, host, options, callback);
};
`,
  );
  return file;
}

beforeAll(async () => {
  upstream = await rawUpstream();
  k.cleanup.push(() => upstream.close());
  front = upstream.port;
  const declared = [`${NAME}:${front}`];
  stateDir = newStateDir();
  const dir = k.project(nodeServer, declared, { egress: "declared-only" });
  await k.storeHttpSecret(stateDir, ...declared);
  await k.unlock(stateDir);
  const gw = await startGateway({
    args: ["api"],
    cwd: dir,
    stateDir,
    nodeFlags: ["--require", resolverPreload()],
  });
  k.cleanup.push(() => gw.close());
  await gw.client.listTools();
  port = await proxyPort(gw);
  // a call that stays in flight until the test says: the window is open for this process
  const done = join(tempDir("portcullis-dot-"), "done");
  const call = approvedCall(
    gw,
    stateDir,
    "fetch_url",
    { url: `http://${NAME}:${front}/open`, after: done },
    new Set(),
  );
  await waitFor(
    () => upstream.text().includes(`Bearer ${SECRET}`),
    20_000,
    "the call's first request released",
  );
  endCall = async () => {
    writeFileSync(done, "");
    await call;
  };
}, 60_000);

afterAll(async () => {
  await endCall?.();
  await k.cleanupAll();
});

const AUTH = `Authorization: Bearer ${PLACEHOLDER}\r\n`;
const connectTo = (authority: string) => `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`;
const lastStatus = (out: string) => out.match(/HTTP\/1\.1 \d{3}/g)?.at(-1);

/** What the upstream got of the request for `path`: its request line and headers. */
function received(path: string): string {
  const got = upstream.text();
  const at = got.indexOf(`${path} HTTP/1.1\r\n`);
  if (at < 0) return "";
  // (the request before it ends with its blank line: no body is sent here)
  const start = got.lastIndexOf("\r\n\r\n", at);
  return got.slice(start < 0 ? 0 : start + 4, got.indexOf("\r\n\r\n", at));
}

describe("a name's one trailing dot", () => {
  it("in a CONNECT target and a Host: the same host, and the request names it without the dot, value and all", async () => {
    const asks: [string, string, string][] = [
      // [CONNECT target, Host, path]
      [`${NAME}.:${front}`, `${NAME}.:${front}`, "/connect-dotted-host-dotted"],
      [`${NAME}.:${front}`, `${NAME}:${front}`, "/connect-dotted"],
      [`${NAME}:${front}`, `${NAME}.:${front}`, "/host-dotted"],
      [`${NAME.toUpperCase()}.:${front}`, `${NAME.toUpperCase()}.:${front}`, "/upper-dotted"],
    ];
    for (const [target, host, path] of asks) {
      const out = await exchange(
        port,
        connectTo(target),
        `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${AUTH}Connection: close\r\n\r\n`,
        3000,
      );
      expect(lastStatus(out), path).toBe("HTTP/1.1 200");
      const r = received(path);
      expect(r, path).toContain(`\r\nAuthorization: Bearer ${SECRET}`);
      expect(r.toLowerCase(), path).toContain(`\r\nhost: ${NAME}:${front}`);
      expect(r, path).not.toMatch(/\r\nHost: [^\r]*\.:/i);
    }
    // an absolute target inside the tunnel names it without the dot too
    const out = await exchange(
      port,
      connectTo(`${NAME}.:${front}`),
      `GET http://${NAME}.:${front}/tunnel-absolute HTTP/1.1\r\nHost: ${NAME}.:${front}\r\n${AUTH}Connection: close\r\n\r\n`,
      3000,
    );
    expect(lastStatus(out)).toBe("HTTP/1.1 200");
    expect(received("/tunnel-absolute")).toMatch(new RegExp(`^GET http://${NAME}:${front}/tunnel-absolute `));
  });

  it("in absolute form: the same, the Host the upstream gets without the dot", async () => {
    const out = await exchange(
      port,
      `GET http://${NAME}.:${front}/absolute-dotted HTTP/1.1\r\nHost: ${NAME}.:${front}\r\n${AUTH}Connection: close\r\n\r\n`,
      undefined,
      3000,
    );
    expect(lastStatus(out)).toBe("HTTP/1.1 200");
    const r = received("/absolute-dotted");
    expect(r).toContain(`\r\nAuthorization: Bearer ${SECRET}`);
    expect(r.toLowerCase()).toContain(`\r\nhost: ${NAME}:${front}`);
  });

  it('under "declared-only", with no value: a dotted Host passes as its name (without the dot); a second dot or another name gets a 421', async () => {
    const ok = await exchange(
      port,
      connectTo(`${NAME}:${front}`),
      `GET /no-value-dotted HTTP/1.1\r\nHost: ${NAME}.:${front}\r\nConnection: close\r\n\r\n`,
      3000,
    );
    expect(lastStatus(ok)).toBe("HTTP/1.1 200");
    expect(received("/no-value-dotted").toLowerCase()).toContain(`\r\nhost: ${NAME}:${front}`);
    for (const [host, auth] of [
      [`${NAME}..:${front}`, ""],
      [`${NAME}..:${front}`, AUTH],
      [`other.example.:${front}`, ""],
      [`${NAME}.evil.example.:${front}`, AUTH],
    ] as const) {
      const out = await exchange(
        port,
        connectTo(`${NAME}.:${front}`),
        `GET /fronted-dot HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`,
        3000,
      );
      expect(lastStatus(out), host).toBe("HTTP/1.1 421");
    }
    // a CONNECT target with a second dot is no host at all
    const bad = await exchange(port, connectTo(`${NAME}..:${front}`), undefined, 3000);
    expect(lastStatus(bad)).toBe("HTTP/1.1 400");
    expect(upstream.text()).not.toContain("/fronted-dot");
    // recorded under the name without its dot, never a dotted one
    const hosts = await waitFor(
      async () => {
        const r = await runCli(["egress", "api", "--json"], { stateDir });
        expect(r.code, r.stderr).toBe(0);
        const all = (
          JSON.parse(r.stdout) as {
            epochs: { destinations: { host: string; port: number; refused: number }[] }[];
          }
        ).epochs.flatMap((e) => e.destinations);
        return all.some((d) => d.refused > 0) ? all.map((d) => d.host) : null;
      },
      10_000,
      "the refusals recorded",
    );
    expect([...new Set(hosts)]).toEqual([NAME]);
  });
});
