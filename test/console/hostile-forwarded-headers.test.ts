// The console checks `Host` against its own loopback names (DNS rebinding). A reverse proxy on
// this machine (a dev server's `/api` proxy with "change origin" on, as front-end tool chains
// configure one) rewrites `Host` to the console's own and forwards whatever reached it: a page of
// evil.test rebound to 127.0.0.1, talking to the proxy's port, then reaches the console with an
// allowed Host, and only `X-Forwarded-Host` / `Forwarded: host=` still say where it came from.
// The console is never meant to sit behind a proxy: a request carrying a forwarding header is
// refused (403, saying why) before any route, whatever else it holds.
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";
import { cookiePairs, post, type RunningConsole, raw, startConsoleProcess } from "./helpers.js";

let stateDir: string;
let console_: RunningConsole;
let base: string;
let proxy: Server;
let proxyBase: string;

/**
 * A local reverse proxy as dev servers run one: every request goes to the console with `Host`
 * (and `Origin`, when sent) rewritten to the console's, and the usual forwarding headers added.
 */
function startProxy(target: URL): Promise<Server> {
  const server = createServer((req, res) => {
    const headers = { ...req.headers };
    headers["x-forwarded-host"] = req.headers.host ?? "";
    headers["x-forwarded-for"] = req.socket.remoteAddress ?? "";
    headers["x-forwarded-proto"] = "http";
    headers.host = target.host;
    if (headers.origin) headers.origin = target.origin;
    const up = request(
      { host: "127.0.0.1", port: target.port, path: req.url, method: req.method, headers, setHost: false },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on("error", () => res.writeHead(502).end());
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

beforeAll(async () => {
  stateDir = newStateDir();
  console_ = await startConsoleProcess(stateDir);
  base = console_.url;
  proxy = await startProxy(new URL(base));
  proxyBase = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => proxy?.close(r));
  await console_?.stop();
  removeDir(stateDir);
});

describe("a request that came through a proxy", () => {
  it("a rebound name reaching the console through a local reverse proxy gets 403, no login form and no session", async () => {
    // the page of evil.test, its name now resolving to 127.0.0.1, talks to the proxy's port
    const page = await raw(`${proxyBase}/login`, {
      headers: { Host: `evil.test:${new URL(proxyBase).port}` },
    });
    expect(page.status, page.body).toBe(403);
    expect(page.body).toMatch(/X-Forwarded-Host/);
    expect(page.body).toMatch(/proxy/);
    expect(page.body).not.toContain("passphrase");
    expect(page.headers["set-cookie"]).toBeUndefined();
    // the refusal carries the headers every answer carries
    expect(page.headers["content-security-policy"]).toMatch(/^default-src 'none'; /);
    expect(page.headers["cache-control"]).toBe("no-store");

    // a login posted through it, with a form token fetched directly: no session either
    const form = await raw(`${base}/login`);
    const token = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const cookie = cookiePairs(form.headers["set-cookie"]).join("; ");
    const login = await raw(`${proxyBase}/login`, {
      method: "POST",
      headers: {
        Host: `evil.test:${new URL(proxyBase).port}`,
        Origin: `http://evil.test:${new URL(proxyBase).port}`,
        Cookie: cookie,
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ csrf: token, passphrase: TEST_PASSPHRASE }).toString(),
    });
    expect(login.status, login.body).toBe(403);
    expect(
      cookiePairs(login.headers["set-cookie"]).filter((c) => c.startsWith("portcullis_session_")),
    ).toEqual([]);
  });

  it("each forwarding header alone, with the console's own Host, is refused and named; without one the same request is served", async () => {
    const cases: [string, string][] = [
      ["X-Forwarded-Host", "evil.test"],
      ["X-Forwarded-Host", new URL(base).host], // even naming the console itself: no proxy is expected
      ["Forwarded", "host=evil.test;proto=http"],
      ["Forwarded", 'for=127.0.0.1;host="127.0.0.1"'],
      ["X-Forwarded-For", "127.0.0.1"],
      ["X-Forwarded-Proto", "https"],
      ["X-Forwarded-Port", "443"],
      ["X-Real-IP", "127.0.0.1"],
    ];
    for (const [name, value] of cases) {
      for (const path of ["/login", "/", "/static/nothing.js", "/events"]) {
        const r = await raw(`${base}${path}`, { headers: { [name]: value } });
        expect(r.status, `${name}: ${value} on ${path}`).toBe(403);
        expect(r.body).toContain(name);
      }
      const login = await post(base, "/login", { csrf: "x", passphrase: TEST_PASSPHRASE }, { [name]: value });
      expect(login.status, `${name} on the login POST`).toBe(403);
      expect(login.body).toContain(name);
    }
    // the control: the same requests without the header
    expect((await raw(`${base}/login`)).status).toBe(200);
    expect((await raw(`${base}/`)).status).toBe(303);
  });

  it("a rebound page that writes 2000 headers first still has the proxy's forwarding headers seen: 403", async () => {
    // node keeps a request's first 2000 headers and drops the rest unseen; 2000 short ones fit in
    // its 16 KiB head, and the proxy appends its own after the page's
    const filler: Record<string, string> = {};
    for (let i = 0; i < 2000; i++) filler[`z${i.toString(36).padStart(3, "0")}`] = "";
    const page = await raw(`${proxyBase}/login`, {
      headers: { Host: `evil.test:${new URL(proxyBase).port}`, ...filler },
    });
    expect(page.status, page.body).toBe(403);
    expect(page.body).toMatch(/X-Forwarded-/);
    expect(page.headers["set-cookie"]).toBeUndefined();
    // the same filler sent directly is served
    expect((await raw(`${base}/login`, { headers: filler })).status).toBe(200);
  });
});
