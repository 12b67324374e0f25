// The console's HTTP edge against a real console process, with plain HTTP requests (node:http, so
// Host and Origin are exactly what the test says): DNS rebinding, foreign origins, missing or
// foreign CSRF tokens, no session, the login and its rate limit, the headers on every response.
// Forged decisions are tried against a real pending request of a real gateway.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { activeGrants } from "../../src/approval/grants.js";
import { getRequest } from "../../src/approval/requests.js";
import { readConsoleAddress } from "../../src/console/address.js";
import { ASSET_TAG } from "../../src/console/assetPaths.js";
import { CONSOLE_ROUTES } from "../../src/console/handlers.js";
import { CSP } from "../../src/console/http.js";
import { PASSKEY_ROUTES } from "../../src/console/passkeys.js";
import { openStore } from "../../src/store/db.js";
import { isWellFormedString } from "../../src/util/canonical.js";
import { auditEvents, pending, storedPending, waitForPending } from "../helpers/approvals.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";
import {
  bindLoopback,
  catalogFile,
  DEPLOY_TOOL,
  gatewayFor,
  handedProofKey,
  hasIpv6Loopback,
  httpLogin,
  type PipelinedRequest,
  pipelined,
  post,
  type RunningConsole,
  raw,
  reviewedIn,
  startConsoleProcess,
} from "./helpers.js";

let stateDir: string;
let console_: RunningConsole;
let base: string;
let port: string;

beforeAll(async () => {
  stateDir = newStateDir();
  console_ = await startConsoleProcess(stateDir);
  base = console_.url;
  port = new URL(base).port;
});

afterAll(async () => {
  await console_?.stop();
  removeDir(stateDir);
});

const PATHS = ["/", "/servers", "/catalog", "/grants", "/audit", "/requests/01JQ7R4S4S0QJ7GZP1S2AAAAAA"];

/** One login as a browser makes it (the form, then its POST) with `cookies` sent besides the form's: the status. */
async function loginStatus(url: string, passphrase: string, cookies: string[] = []): Promise<number> {
  const form = await raw(`${url}/login`);
  const token = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
  const cookie = [String(form.headers["set-cookie"]).split(";")[0]!, ...cookies].join("; ");
  return (await post(url, "/login", { csrf: token, passphrase }, { Cookie: cookie })).status;
}

/** A login's POST as a browser sends it, after fetching its form now (`cookies` sent besides the form's). */
async function loginRequest(
  url: string,
  passphrase: string,
  cookies: string[] = [],
): Promise<PipelinedRequest> {
  const form = await raw(`${url}/login`);
  const token = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
  const cookie = [String(form.headers["set-cookie"]).split(";")[0]!, ...cookies].join("; ");
  return {
    path: "/login",
    headers: { Origin: url, Cookie: cookie, "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ csrf: token, passphrase }).toString(),
  };
}

/**
 * The sixth wrong passphrase and the next attempt (`passphrase`, with `cookies`), sent together
 * (pipelined): the statuses. The next is checked right after the sixth failure is counted, so
 * it meets the one-second wait that failure starts. Sent one after the other, it raced that
 * second and came too late on a loaded machine (200 where the test wanted 429).
 */
async function sixthWrongThen(
  url: string,
  passphrase: string,
  cookies: string[] = [],
  sixthCookies: string[] = [],
): Promise<number[]> {
  const both = [
    await loginRequest(url, "wrong 5", sixthCookies),
    await loginRequest(url, passphrase, cookies),
  ];
  return (await pipelined(url, both)).map((r) => r.status);
}

/**
 * A real gateway whose `deploy` call (with `note`) waits for the human, and a console session
 * logged in over HTTP: `body` gets the call, the request's decide path and the session.
 */
async function withPendingDeploy(
  note: string,
  body: (p: {
    call: Promise<{ [key: string]: unknown }>;
    request: string;
    path: string;
    session: Awaited<ReturnType<typeof httpLogin>>;
  }) => Promise<void>,
): Promise<void> {
  const dir = tempDir("portcullis-console-pending-");
  const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]));
  try {
    const call = gw.client.callTool({ name: "deploy", arguments: { note } });
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a pending request", storedPending);
    const session = await httpLogin(base);
    await body({ call, request: req.request, path: `/requests/${req.request}/decide`, session });
  } finally {
    await gw.close();
    removeDir(dir);
  }
}

/** A decision the console takes (303): the held call then completes, and nothing is left pending. */
async function expectDecided(
  path: string,
  fields: Record<string, string>,
  cookie: string,
  call: Promise<{ [key: string]: unknown }>,
): Promise<void> {
  const ok = await post(base, path, fields, { Cookie: cookie });
  expect(ok.status, ok.body).toBe(303);
  expect((await call).isError).toBeFalsy();
  expect(await pending(stateDir)).toEqual([]);
}

describe("every response", () => {
  it("carries the strict CSP, nosniff and a same-origin referrer policy, and never a CORS header (even to a foreign Origin)", async () => {
    for (const path of ["/login", "/static/console.js", "/", "/nowhere"]) {
      const r = await raw(`${base}${path}`, { headers: { Origin: "http://evil.test" } });
      expect(r.headers["content-security-policy"]).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
          "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      );
      expect(r.headers["x-content-type-options"]).toBe("nosniff");
      expect(r.headers["referrer-policy"]).toBe("same-origin");
      expect(Object.keys(r.headers).filter((h) => h.startsWith("access-control-"))).toEqual([]);
    }
  });
});

describe("every refusal", () => {
  it("carries the same headers: a foreign Host, a method, no session, a foreign Origin, a body of the wrong type or size", async () => {
    const a = await httpLogin(base);
    const form = { "Content-Type": "application/x-www-form-urlencoded" };
    const refusals = await Promise.all([
      raw(`${base}/login`, { headers: { Host: `evil.test:${port}`, Origin: "http://evil.test" } }),
      raw(`${base}/`, { method: "PUT", headers: { Origin: "http://evil.test" } }),
      post(base, "/logout", {}, { Origin: "http://evil.test" }),
      post(base, "/logout", { csrf: a.csrf }, { Cookie: a.cookie, Origin: "http://evil.test" }),
      raw(`${base}/logout`, {
        method: "POST",
        headers: { Origin: base, Cookie: a.cookie, "Content-Type": "text/plain" },
        body: `csrf=${a.csrf}`,
      }),
      raw(`${base}/logout`, {
        method: "POST",
        headers: { Origin: base, Cookie: a.cookie, ...form },
        body: `csrf=${a.csrf}&x=${"x".repeat(70_000)}`,
      }),
      raw(`${base}/passkeys/options`, {
        method: "POST",
        headers: {
          Origin: base,
          Cookie: a.cookie,
          "Content-Type": "application/json",
          "X-CSRF-Token": a.csrf,
        },
        body: "{}",
      }),
    ]);
    expect(refusals.map((r) => r.status)).toEqual([421, 405, 403, 403, 415, 413, 400]);
    for (const r of refusals) {
      expect(r.headers["content-security-policy"], String(r.status)).toMatch(/^default-src 'none'; /);
      expect(r.headers["x-content-type-options"]).toBe("nosniff");
      expect(r.headers["x-frame-options"]).toBe("DENY");
      expect(r.headers["cache-control"]).toBe("no-store");
      expect(Object.keys(r.headers).filter((h) => h.startsWith("access-control-"))).toEqual([]);
    }
  });
});

describe("a request node's parser refuses", () => {
  it("is answered with the same headers (400 for a malformed header, 431 for headers over the limit), and the console serves on", async () => {
    const at = Number(port);
    const answers = [
      await rawBytes(at, `GET /login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nNot a header\r\n\r\n`),
      await rawBytes(
        at,
        `GET /login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
      ),
    ];
    expect(answers.map((a) => a.split("\r\n")[0])).toEqual([
      "HTTP/1.1 400 Bad Request",
      "HTTP/1.1 431 Request Header Fields Too Large",
    ]);
    for (const a of answers) {
      const head = a.split("\r\n\r\n")[0]!.toLowerCase();
      expect(head).toContain(`content-security-policy: ${CSP.toLowerCase()}`);
      expect(head).toContain("x-content-type-options: nosniff");
      expect(head).toContain("x-frame-options: deny");
      expect(head).toContain("cache-control: no-store");
      expect(head).not.toContain("access-control-");
    }
    expect((await raw(`${base}/login`)).status).toBe(200);
  });
});

/** What the console writes back for `text` sent as is on a new connection, until it closes. */
function rawBytes(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1", () => s.write(text));
    let out = "";
    s.setEncoding("latin1");
    s.on("data", (d: string) => {
      out += d;
    });
    s.on("close", () => resolve(out));
    // a reset after the answer (the rest of an oversize head left unread) is the answer's end
    s.on("error", (e) => (out ? resolve(out) : reject(e)));
  });
}

describe("DNS rebinding", () => {
  it("a Host other than 127.0.0.1 or localhost on this port is refused (421), before anything else", async () => {
    for (const host of [
      "evil.test",
      `evil.test:${port}`,
      "127.0.0.1",
      `127.0.0.1:${Number(port) + 1}`,
      "",
      `127.0.0.2:${port}`,
      `[::ffff:7f00:2]:${port}`,
      `127.1:${port}`,
      `localhost.:${port}`,
    ]) {
      const r = await raw(`${base}/login`, { headers: { Host: host } });
      expect(r.status, host).toBe(421);
      expect(r.body).not.toContain("passphrase");
    }
    const login = await post(
      base,
      "/login",
      { passphrase: "x" },
      { Host: `evil.test:${port}`, Origin: `http://evil.test:${port}` },
    );
    expect(login.status).toBe(421);
    expect((await raw(`${base}/login`, { headers: { Host: `localhost:${port}` } })).status).toBe(200);
    expect((await raw(`${base}/login`)).status).toBe(200);
  });

  it("127.0.0.1 written as its IPv4-mapped IPv6 address reaches the console and is its own", async () => {
    if (!(await hasIpv6Loopback())) return;
    // raw() connects to ::ffff:127.0.0.1 (the console's 127.0.0.1 socket takes it) and sends
    // Host as the URL parser writes it, `[::ffff:7f00:1]:PORT`, as a browser does
    const mapped = `http://[::ffff:127.0.0.1]:${port}`;
    const login = await raw(`${mapped}/login`);
    expect(login.status, login.body).toBe(200);
    expect(login.body).toContain("passphrase");
    // the same, sent in another spelling of that address: compared by value
    const spelled = await raw(`${base}/login`, { headers: { Host: `[0:0:0:0:0:ffff:127.0.0.1]:${port}` } });
    expect(spelled.status).toBe(200);
  });
});

describe("a state change's Origin", () => {
  /** A login with the right passphrase, its Host and Origin as given, sent to `at`: the status. */
  async function loginWith(at: string, host: string, origin: string | undefined): Promise<number> {
    const form = await raw(`${at}/login`, { headers: { Host: host } });
    expect(form.status, host).toBe(200);
    const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const r = await raw(`${at}/login`, {
      method: "POST",
      headers: {
        Host: host,
        ...(origin === undefined ? {} : { Origin: origin }),
        Cookie: String(form.headers["set-cookie"]).split(";")[0]!,
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ csrf, passphrase: TEST_PASSPHRASE }).toString(),
    });
    if (r.status === 403) expect(r.body).toContain("the Origin of this request is not the console");
    return r.status;
  }

  it("is compared with the Host by value: another spelling of the same name or address is the same origin; another host, port or scheme is not", async () => {
    // taken: the Host in another spelling of what the Origin names (as a browser writes it)
    const sameOrigin: [string, string][] = [
      [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`],
      [`LOCALHOST:${port}`, `http://localhost:${port}`],
      [`LocalHost:${port}`, `http://localhost:${port}`],
      [`[0:0:0:0:0:ffff:127.0.0.1]:${port}`, `http://[::ffff:7f00:1]:${port}`],
    ];
    for (const [host, origin] of sameOrigin)
      expect([200, 303], `${host} ${origin}`).toContain(await loginWith(base, host, origin));
    // refused: another host (even one of the console's), port or scheme, no Origin, and an
    // Origin no browser writes (only its serialization is, compared as written)
    const otherOrigin: [string, string | undefined][] = [
      [`127.0.0.1:${port}`, `http://localhost:${port}`],
      [`127.0.0.1:${port}`, `http://[::ffff:7f00:1]:${port}`],
      [`127.0.0.1:${port}`, `http://127.0.0.1:${Number(port) + 1}`],
      [`127.0.0.1:${port}`, `https://127.0.0.1:${port}`],
      [`127.0.0.1:${port}`, "http://127.0.0.1"],
      [`127.0.0.1:${port}`, "null"],
      [`127.0.0.1:${port}`, undefined],
      [`LOCALHOST:${port}`, `http://LOCALHOST:${port}`],
      [`127.0.0.1:${port}`, `http://127.0.0.1:${port}/`],
      [`127.0.0.1:${port}`, `http://evil.test:${port}`],
    ];
    for (const [host, origin] of otherOrigin)
      expect(await loginWith(base, host, origin), `${host} ${origin}`).toBe(403);
  });

  it("at [::1], which the console holds: [0::1] in the Host is the origin http://[::1]:PORT", async () => {
    if (!(await hasIpv6Loopback())) return;
    const v6 = `http://[::1]:${port}`;
    expect([200, 303]).toContain(await loginWith(v6, `[0::1]:${port}`, v6));
    expect(await loginWith(v6, `[0::1]:${port}`, `http://127.0.0.1:${port}`)).toBe(403);
  });
});

describe("both loopback names", () => {
  it("the console holds [::1] on its port too, so nobody else can answer http://localhost:PORT there", async () => {
    if (!(await hasIpv6Loopback())) return;
    const squat = await bindLoopback("::1", Number(port));
    if (typeof squat !== "string") await new Promise((r) => squat.close(r));
    expect(squat).toBe("EADDRINUSE");
    // What arrives there is the console's own: a browser at localhost sends Host localhost:PORT.
    const v6 = `http://[::1]:${port}`;
    const login = await raw(`${v6}/login`, { headers: { Host: `localhost:${port}` } });
    expect(login.status).toBe(200);
    expect(login.body).toContain("passphrase");
    // It listens on ::1, so [::1] is its own address too, in any spelling, on either socket.
    const own = await raw(`${v6}/login`);
    expect(own.status, own.body).toBe(200);
    expect(own.body).toContain("passphrase");
    expect((await raw(`${base}/login`, { headers: { Host: `[0::1]:${port}` } })).status).toBe(200);
    expect((await raw(`${v6}/login`, { headers: { Host: `[::2]:${port}` } })).status).toBe(421);
  });
});

describe("no session", () => {
  it("shows nothing but the login page: every view redirects to it, events and state changes are refused", async () => {
    for (const path of PATHS) {
      const r = await raw(`${base}${path}`);
      expect(r.status, path).toBe(303);
      expect(r.headers.location).toMatch(/^\/login/);
      expect(r.body).toBe("");
    }
    expect((await raw(`${base}/events`)).status).toBe(403);
    const revoke = await post(base, "/grants/01JQ7R4S4S0QJ7GZP1S2AAAAAA/revoke", { csrf: "x" });
    expect(revoke.status).toBe(403);
    const decide = await post(base, "/requests/01JQ7R4S4S0QJ7GZP1S2AAAAAA/decide", {
      csrf: "x",
      action: "deny",
    });
    expect(decide.status).toBe(403);
    // A made-up session cookie is no session.
    const forged = await raw(`${base}/grants`, {
      headers: { Cookie: `portcullis_session_${port}=${"A".repeat(43)}` },
    });
    expect(forged.status).toBe(303);
  });
});

describe("login", () => {
  it("a wrong passphrase, a login form from elsewhere or a foreign Origin gives no session; the right one gives a strict cookie", async () => {
    const form = await raw(`${base}/login`);
    const token = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const loginCookie = String(form.headers["set-cookie"]).split(";")[0]!;
    const attempt = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      post(base, "/login", fields, { Cookie: loginCookie, ...headers });

    const wrong = await attempt({ csrf: token, passphrase: "not the passphrase" });
    expect(wrong.status).toBe(401);
    expect(String(wrong.headers["set-cookie"] ?? "")).not.toContain("portcullis_session_");
    expect(wrong.body).toContain("wrong passphrase");

    const noToken = await attempt({ passphrase: "correct horse battery staple" });
    expect(noToken.status).toBe(403);
    const foreign = await attempt(
      { csrf: token, passphrase: "correct horse battery staple" },
      { Origin: "http://evil.test" },
    );
    expect(foreign.status).toBe(403);
    const noOrigin = await raw(`${base}/login`, {
      method: "POST",
      headers: { Cookie: loginCookie, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ csrf: token, passphrase: "correct horse battery staple" }).toString(),
    });
    expect(noOrigin.status).toBe(403);
    for (const r of [noToken, foreign, noOrigin])
      expect(String(r.headers["set-cookie"] ?? "")).not.toContain("portcullis_session_");

    // The answer hands the proof key to the page, which goes on to the next page.
    const ok = await attempt({ csrf: token, passphrase: "correct horse battery staple" });
    expect(ok.status).toBe(200);
    expect(handedProofKey(ok.body)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(ok.body).toContain('data-next="/"');
    const session = ([] as string[])
      .concat(ok.headers["set-cookie"] ?? [])
      .find((c) => c.startsWith("portcullis_session_"))!;
    expect(session).toMatch(
      new RegExp(`^portcullis_session_${port}=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=/$`),
    );
    const home = await raw(`${base}/`, { headers: { Cookie: session.split(";")[0]! } });
    expect(home.status).toBe(200);
    expect(home.body).toContain("Pending requests");
  });
});

describe("cookies of the same name", () => {
  it("a junk value sent before the real one (a server on another port set it with a longer Path) hides neither the session nor the login token", async () => {
    const a = await httpLogin(base);
    const junkSession = `portcullis_session_${port}=junk`;
    for (const cookie of [`${junkSession}; ${a.cookie}`, `${a.cookie}; ${junkSession}`]) {
      for (const path of ["/", "/grants", "/requests/01JQ7R4S4S0QJ7GZP1S2AAAAAA"]) {
        const r = await raw(`${base}${path}`, { headers: { Cookie: cookie } });
        expect(r.status, `${path} with ${cookie}`).not.toBe(303);
      }
      // The login page sees the live session too (it sends the human back, no loop).
      const login = await raw(`${base}/login?next=/grants`, { headers: { Cookie: cookie } });
      expect(login.status).toBe(303);
      expect(login.headers.location).toBe("/grants");
      // A state change is judged by the live session's token, not refused as "log in first".
      const revoke = await post(
        base,
        "/grants/01JQ7R4S4S0QJ7GZP1S2AAAAAA/revoke",
        { csrf: a.csrf },
        { Cookie: cookie },
      );
      expect(revoke.body).not.toContain("log in first");
    }
    // Only junk values are still no session.
    const none = await raw(`${base}/grants`, { headers: { Cookie: `${junkSession}; ${junkSession}2` } });
    expect(none.status).toBe(303);

    // The login form's double-submitted token: a junk value first does not hide it.
    const form = await raw(`${base}/login`);
    const token = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const real = String(form.headers["set-cookie"]).split(";")[0]!;
    const junkLogin = `portcullis_login_${port}=junk`;
    const local = `http://localhost:${port}`;
    const options = await raw(`${local}/login/passkey/options`, {
      method: "POST",
      headers: {
        Origin: local,
        Cookie: `${junkLogin}; ${real}`,
        "Content-Type": "application/json",
        "X-CSRF-Token": token,
      },
      body: "{}",
    });
    expect(options.status, options.body).toBe(409); // past the token: no passkey is registered
    const ok = await post(
      base,
      "/login",
      { csrf: token, passphrase: TEST_PASSPHRASE },
      { Cookie: `${junkLogin}; ${real}` },
    );
    expect(ok.status, ok.body).toBe(200);
    expect(String(ok.headers["set-cookie"])).toContain("portcullis_session_");
    // A token that is none of the values is still refused.
    const other = await post(
      base,
      "/login",
      { csrf: "other", passphrase: TEST_PASSPHRASE },
      { Cookie: `${junkLogin}; ${real}` },
    );
    expect(other.status).toBe(403);
  });
});

describe("forged decisions", () => {
  it("without the CSRF token, with another session's token, from a foreign Origin or without a session: refused, the request stays pending", async () => {
    await withPendingDeploy("forged?", async ({ call, request, path, session: a }) => {
      const b = await httpLogin(base);
      const approve = { action: "approve-session" };
      const tries = [
        post(base, path, approve, { Cookie: a.cookie }),
        post(base, path, { ...approve, csrf: b.csrf }, { Cookie: a.cookie }),
        post(base, path, { ...approve, csrf: a.csrf }, { Cookie: a.cookie, Origin: "http://evil.test" }),
        post(
          base,
          path,
          { ...approve, csrf: a.csrf },
          { Cookie: a.cookie, Origin: `http://localhost:${Number(port) + 1}` },
        ),
        post(base, path, { ...approve, csrf: a.csrf }),
        post(base, path, { ...approve, csrf: a.csrf }, { Cookie: a.cookie, Host: `evil.test:${port}` }),
      ];
      const statuses = (await Promise.all(tries)).map((r) => r.status);
      expect(statuses).toEqual([403, 403, 403, 403, 403, 421]);
      const revoke = await post(base, "/grants/01JQ7R4S4S0QJ7GZP1S2AAAAAA/revoke", {}, { Cookie: a.cookie });
      expect(revoke.status).toBe(403);
      expect((await pending(stateDir)).map((p) => p.request)).toEqual([request]);

      // The same POST with the session's own token and Origin is a decision (signed: the call proceeds).
      const card = await raw(`${base}/requests/${request}`, { headers: { Cookie: a.cookie } });
      const reviewed = reviewedIn(card.body);
      // Without the digest of the review the page showed, no approval is made at all.
      const unreviewed = await post(
        base,
        path,
        { ...approve, csrf: a.csrf, proof: a.proofKey! },
        { Cookie: a.cookie },
      );
      expect(unreviewed.status).toBe(400);
      expect(unreviewed.body).toContain("reload the request");
      expect((await pending(stateDir)).map((p) => p.request)).toEqual([request]);
      await expectDecided(path, { ...approve, csrf: a.csrf, proof: a.proofKey!, reviewed }, a.cookie, call);
    });
  });
});

describe("forged revocations", () => {
  it("without the CSRF token, with another session's token, from a foreign Origin or with none, or without a session: refused, the grant stays", async () => {
    await withPendingDeploy("revoke?", async ({ call, request, path, session: a }) => {
      const card = await raw(`${base}/requests/${request}`, { headers: { Cookie: a.cookie } });
      const approve = {
        action: "approve-session",
        csrf: a.csrf,
        proof: a.proofKey!,
        reviewed: reviewedIn(card.body),
      };
      await expectDecided(path, approve, a.cookie, call);
      const grant = activeOf(request);
      expect(grant, "the session grant the approval made").toBeDefined();
      const b = await httpLogin(base);
      const revoke = `/grants/${grant}/revoke`;
      const tries = [
        post(base, revoke, {}, { Cookie: a.cookie }),
        post(base, revoke, { csrf: b.csrf }, { Cookie: a.cookie }),
        post(base, revoke, { csrf: a.csrf }, { Cookie: a.cookie, Origin: "http://evil.test" }),
        post(
          base,
          revoke,
          { csrf: a.csrf },
          { Cookie: a.cookie, Origin: `http://127.0.0.1:${Number(port) + 1}` },
        ),
        post(base, revoke, { csrf: a.csrf }, { Cookie: a.cookie, Origin: "null" }),
        raw(`${base}${revoke}`, {
          method: "POST",
          headers: { Cookie: a.cookie, "Content-Type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ csrf: a.csrf }).toString(),
        }),
        post(base, revoke, { csrf: a.csrf }),
        post(base, revoke, { csrf: a.csrf }, { Cookie: a.cookie, Host: `evil.test:${port}` }),
      ];
      const statuses = (await Promise.all(tries)).map((r) => r.status);
      expect(statuses).toEqual([403, 403, 403, 403, 403, 403, 403, 421]);
      expect(activeOf(request)).toBe(grant);
      // The session's own token from its own page revokes.
      const ok = await post(base, revoke, { csrf: a.csrf }, { Cookie: a.cookie });
      expect(ok.status, ok.body).toBe(303);
      expect(activeOf(request)).toBeUndefined();
    });
  });
});

/** The active grant made by approving `request`, if any. */
function activeOf(request: string): string | undefined {
  const db = openStore(stateDir);
  try {
    return activeGrants(db).find((g) => g.request === request)?.grant;
  } finally {
    db.close();
  }
}

describe("a session's POST routes, every one", () => {
  it("refuses each without a session (403), and only the login's routes are served before it; with one, each from another Origin or without its CSRF token", async () => {
    const sample = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";
    const posts = [...PASSKEY_ROUTES, ...CONSOLE_ROUTES].filter((r) => r.method === "POST");
    // A new POST served before the passphrase must be added here on purpose.
    expect(posts.filter((r) => !r.session).map((r) => r.path.source)).toEqual([
      "^\\/login\\/passkey\\/options$",
      "^\\/login\\/passkey$",
      "^\\/login$",
    ]);
    const a = await httpLogin(base);
    const junk = `portcullis_session_${port}=${"A".repeat(43)}`;
    for (const route of posts.filter((r) => r.session)) {
      const path = route.path.source
        .replace(/^\^/, "")
        .replace(/\$$/, "")
        .replaceAll("\\/", "/")
        .replace(/\([^)]*\)/, sample);
      const json = route.body === "json";
      for (const cookie of [undefined, junk]) {
        // the token of a live session, from the console's own Origin: only the session is missing
        const r = await raw(`${base}${path}`, {
          method: "POST",
          headers: {
            Origin: base,
            "Content-Type": json ? "application/json" : "application/x-www-form-urlencoded",
            "X-CSRF-Token": a.csrf,
            ...(cookie ? { Cookie: cookie } : {}),
          },
          body: json ? "{}" : new URLSearchParams({ csrf: a.csrf, passphrase: TEST_PASSPHRASE }).toString(),
        });
        expect(r.status, `${path} ${cookie ?? "no cookie"}`).toBe(403);
        expect(r.body, path).toContain("log in first");
        expect(String(r.headers["set-cookie"] ?? ""), path).not.toContain("portcullis_session_");
      }
      // with the live session: from another Origin, or without its CSRF token, each is refused
      // before its handler runs (no route is exempt from either check)
      const sent = (origin: string, csrf: string | null) =>
        raw(`${base}${path}`, {
          method: "POST",
          headers: {
            Origin: origin,
            Cookie: a.cookie,
            "Content-Type": json ? "application/json" : "application/x-www-form-urlencoded",
            ...(csrf !== null ? { "X-CSRF-Token": csrf } : {}),
          },
          body: json ? "{}" : new URLSearchParams(csrf !== null ? { csrf } : {}).toString(),
        });
      const foreign = await sent("http://evil.test", a.csrf);
      expect([foreign.status, foreign.body], path).toEqual([
        403,
        "refused: the Origin of this request is not the console\n",
      ]);
      const tokenless = await sent(base, null);
      expect([tokenless.status, tokenless.body], path).toEqual([
        403,
        "refused: missing or wrong CSRF token\n",
      ]);
    }
  });
});

describe("a session's views, every one", () => {
  it("sends each to the login page without a session, showing nothing; only the login, the assets and the passkeys' redirect are served before it", async () => {
    const gets = [...PASSKEY_ROUTES, ...CONSOLE_ROUTES].filter((r) => r.method === "GET");
    // A new view served before the passphrase must be added here on purpose.
    // the assets under this console run's own path (assetPaths.ts)
    const asset = (name: string) => `^\\/static\\/${ASSET_TAG}\\/${name.replaceAll(".", "\\.")}$`;
    expect(gets.filter((r) => !r.session).map((r) => r.path.source)).toEqual([
      asset("webauthn.js"),
      "^\\/passkeys$",
      asset("console.js"),
      asset("console.css"),
      "^\\/favicon\\.ico$",
      "^\\/login$",
    ]);
    const junk = `portcullis_session_${port}=${"A".repeat(43)}`;
    for (const route of gets.filter((r) => r.session)) {
      const path = route.path.source
        .replace(/^\^/, "")
        .replace(/\$$/, "")
        .replaceAll("\\/", "/")
        .replace(/\([^)]*\)/, "01JQ7R4S4S0QJ7GZP1S2AAAAAA");
      for (const cookie of [undefined, junk]) {
        const r = await raw(`${base}${path}`, { headers: cookie ? { Cookie: cookie } : {} });
        if (path === "/events") {
          expect(r.status, path).toBe(403);
          continue;
        }
        expect(r.status, `${path} ${cookie ?? "no cookie"}`).toBe(303);
        expect(r.headers.location, path).toMatch(/^\/login/);
        expect(r.body, path).toBe("");
      }
    }
    // The passkeys page sends a visit without a session to the login too (at localhost).
    const local = await raw(`${base}/passkeys`, { headers: { Host: `localhost:${port}` } });
    expect(local.status).toBe(303);
    expect(local.headers.location).toBe("/login?next=%2Fpasskeys");
  });
});

describe("the held proof's key", () => {
  it("is in the login's answer only: no page the session cookie reads carries it", async () => {
    const a = await httpLogin(base);
    expect(a.proofKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    for (const path of [...PATHS, "/login", "/passkeys"]) {
      const r = await raw(`${base}${path}`, { headers: { Cookie: a.cookie } });
      expect(r.body, path).not.toContain(a.proofKey!);
      expect(JSON.stringify(r.headers), path).not.toContain(a.proofKey!);
    }
  });
});

describe("a denial's reason", () => {
  it("is cut at 500 UTF-16 units on a code point boundary: never half a surrogate pair in the decision or the audit", async () => {
    await withPendingDeploy("long reason", async ({ call, request, path, session: a }) => {
      // the 500th unit is the first half of 😀: cut there, a lone surrogate would be signed and kept
      const reason = `${"a".repeat(499)}😀 and more`;
      const denied = await post(
        base,
        path,
        { action: "deny", csrf: a.csrf, proof: a.proofKey!, reason },
        { Cookie: a.cookie },
      );
      expect(denied.status, denied.body).toBe(303);
      await expect(call).rejects.toThrow(/A human denied this call/);
      const db = openStore(stateDir);
      try {
        const kept = getRequest(db, request)!.reason!;
        expect(kept).toBe("a".repeat(499));
        expect(isWellFormedString(kept)).toBe(true);
      } finally {
        db.close();
      }
      const events = await auditEvents(stateDir);
      const decided = events.filter((e) => JSON.stringify(e).includes("a".repeat(499)));
      expect(decided.length).toBeGreaterThan(0);
      for (const e of decided) expect(isWellFormedString(JSON.stringify(e))).toBe(true);
    });
  });
});

describe("a refused decision", () => {
  it("proven by the passphrase but refused (409, stale review): the page still gets the new proof key, and it decides", async () => {
    await withPendingDeploy("stale review", async ({ call, request, path, session: a }) => {
      // No proof key sent: the decision asks for the passphrase, which proves it (a new key), and
      // then the stale review refuses the decision.
      const stale = await post(
        base,
        path,
        { action: "approve-call", csrf: a.csrf, reviewed: "sha256:stale", passphrase: TEST_PASSPHRASE },
        { Cookie: a.cookie },
      );
      expect(stale.status, stale.body).toBe(409);
      const key = handedProofKey(stale.body);
      expect(key, stale.body).not.toBeNull();
      expect((await pending(stateDir)).map((p) => p.request)).toEqual([request]);

      // That key is the held proof: the right review with it decides without the passphrase.
      const card = await raw(`${base}/requests/${request}`, { headers: { Cookie: a.cookie } });
      const reviewed = reviewedIn(card.body);
      await expectDecided(
        path,
        { action: "approve-call", csrf: a.csrf, proof: key!, reviewed },
        a.cookie,
        call,
      );
    });
  });
});

describe("one console per state directory", () => {
  it("a second 'portcullis console' prints the running one's address; doctor reports it", async () => {
    const again = await runCli(["console", "--no-open", "--state-dir", stateDir]);
    expect(again.code, again.stderr).toBe(0);
    // The printed link carries the console's ticket (the same as in console.json, which only the user reads).
    const { ticket } = readConsoleAddress(stateDir)!;
    expect(ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(again.stdout.trim()).toBe(`the console is already running at ${base}/?ticket=${ticket}`);
    const doctor = await runCli(["doctor", "--json", "--state-dir", stateDir]);
    expect(JSON.parse(doctor.stdout).console).toEqual({ running: true, url: base, pid: console_.pid });
    const text = await runCli(["doctor", "--state-dir", stateDir]);
    expect(text.stdout).toContain(`console          ${base} (pid ${console_.pid})\n`);
  });

  it("on exit it removes its address, and doctor says it is not running", async () => {
    const dir = newStateDir();
    try {
      const c = await startConsoleProcess(dir, ["--proof-window", "0"]);
      await c.stop();
      expect(existsSync(join(dir, "console.json"))).toBe(false);
      const doctor = await runCli(["doctor", "--json", "--state-dir", dir]);
      expect(JSON.parse(doctor.stdout).console).toEqual({
        running: false,
        start: `portcullis console --state-dir ${dir}`,
      });
      const text = await runCli(["doctor", "--state-dir", dir]);
      expect(text.stdout).toContain(
        `console          not running ('portcullis console --state-dir ${dir}' starts it)\n`,
      );
    } finally {
      removeDir(dir);
    }
  });
});

describe("failed logins", () => {
  it("are rate-limited: after a few wrong passphrases even the right one must wait (429)", async () => {
    const dir = newStateDir();
    const c = await startConsoleProcess(dir);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push(await loginStatus(c.url, `wrong ${i}`));
      statuses.push(...(await sixthWrongThen(c.url, TEST_PASSPHRASE)));
      expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429]);
    } finally {
      await c.stop();
      removeDir(dir);
    }
  });

  it("are counted the same wherever the passphrase is given: a session cookie's guesses at the audit and a passkey's registration are slowed too", async () => {
    const dir = newStateDir();
    const c = await startConsoleProcess(dir);
    try {
      // A process holding a session cookie (not the page's proof key) guesses where a logged-in
      // page gives the passphrase again.
      const a = await httpLogin(c.url);
      const at = new URL(c.url).port;
      const local = `http://localhost:${at}`;
      const audit = (passphrase: string): PipelinedRequest => ({
        path: "/audit/open",
        headers: { Origin: c.url, Cookie: a.cookie, "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ csrf: a.csrf, passphrase }).toString(),
      });
      const register = (passphrase: string): PipelinedRequest => ({
        path: "/passkeys/options",
        headers: {
          Host: `localhost:${at}`,
          Origin: local,
          Cookie: a.cookie,
          "Content-Type": "application/json",
          "X-CSRF-Token": a.csrf,
        },
        body: JSON.stringify({ passphrase }),
      });
      const guesses: number[] = [];
      for (let i = 0; i < 5; i++)
        guesses.push(
          ...(await pipelined(c.url, [(i % 2 ? register : audit)(`wrong ${i}`)])).map((r) => r.status),
        );
      expect(guesses).toEqual([401, 401, 401, 401, 401]);
      // Even the right passphrase now waits, at either place and at the login: the audit stays
      // sealed, no passkey is begun. Sent together with the sixth guess (pipelined), each is
      // checked right after that guess's failure is counted, within the second it makes them wait.
      const [sixth, right, added, login] = await pipelined(c.url, [
        register("wrong 5"),
        audit(TEST_PASSPHRASE),
        register(TEST_PASSPHRASE),
        await loginRequest(c.url, TEST_PASSPHRASE),
      ]);
      expect(sixth!.status).toBe(401);
      expect(sixth!.body).not.toContain("too many wrong passphrases");
      expect(right!.status).toBe(401);
      expect(right!.body).toContain("too many wrong passphrases");
      expect(right!.body).not.toContain("<h2>Sessions</h2>");
      expect(added!.status).toBe(401);
      expect(added!.body).toContain("too many wrong passphrases");
      expect(login!.status).toBe(429);
    } finally {
      await c.stop();
      removeDir(dir);
    }
  });

  it("by others never make the human wait: a browser that came by the printed link (its ticket) is counted apart", async () => {
    const dir = newStateDir();
    const c = await startConsoleProcess(dir);
    const ticketName = `portcullis_ticket_${new URL(c.url).port}`;
    const attempt = (passphrase: string, cookies: string[] = []) => loginStatus(c.url, passphrase, cookies);
    try {
      // The human's link: what `portcullis console` prints (and opens).
      const printed = await runCli(["console", "--no-open", "--state-dir", dir]);
      const link = /already running at (\S+)/.exec(printed.stdout)![1]!;
      expect(new URL(link).searchParams.get("ticket")).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // Opening it sets the ticket cookie (strict, script-proof) and leads to the URL without it.
      const opened = await raw(link);
      expect(opened.status).toBe(303);
      expect(opened.headers.location).toBe("/");
      const set = String(opened.headers["set-cookie"]);
      expect(set).toMatch(new RegExp(`^${ticketName}=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=/$`));
      const ticketCookie = set.split(";")[0]!;
      // The browser's first arrival this run clears what an earlier server on the port left there;
      // a later link (a request's, opened by the same browser) keeps the page's proof key
      expect(opened.headers["clear-site-data"]).toBe('"cache", "storage"');
      const again = await raw(link, { headers: { Cookie: ticketCookie } });
      expect(again.status).toBe(303);
      expect(again.headers["clear-site-data"]).toBeUndefined();
      // A made-up ticket sets nothing and clears nothing (and is dropped from the URL all the same).
      const madeUp = await raw(`${c.url}/login?next=%2Fgrants&ticket=${"A".repeat(43)}`);
      expect(madeUp.status).toBe(303);
      expect(madeUp.headers.location).toBe("/login?next=%2Fgrants");
      expect(madeUp.headers["set-cookie"]).toBeUndefined();
      expect(madeUp.headers["clear-site-data"]).toBeUndefined();

      // Any local process, no secret: wrong passphrases until the console throttles (429), a
      // made-up ticket cookie (another port can set one) no way around it.
      const junk = `${ticketName}=${"B".repeat(43)}`;
      const attacker: number[] = [];
      for (let i = 0; i < 5; i++) attacker.push(await attempt(`wrong ${i}`));
      attacker.push(...(await sixthWrongThen(c.url, TEST_PASSPHRASE, [junk])));
      expect(attacker).toEqual([401, 401, 401, 401, 401, 401, 429]);
      // The human, holding the ticket, logs in at once, even with the junk cookie sent first.
      expect(await attempt(TEST_PASSPHRASE, [junk, ticketCookie])).toBe(200);

      // The ticket's own count still slows a guesser who holds it.
      const holder: number[] = [];
      for (let i = 0; i < 5; i++) holder.push(await attempt(`wrong ${i}`, [ticketCookie]));
      holder.push(...(await sixthWrongThen(c.url, TEST_PASSPHRASE, [ticketCookie], [ticketCookie])));
      expect(holder).toEqual([401, 401, 401, 401, 401, 401, 429]);
    } finally {
      await c.stop();
      removeDir(dir);
    }
  });
});

describe("an earlier console run on the same port", () => {
  it("leaves nothing that counts in the next: its session cookie, CSRF token, proof key and ticket are refused or ignored", async () => {
    const dir = newStateDir();
    const first = await startConsoleProcess(dir);
    const at = new URL(first.url).port;
    let next: RunningConsole | null = null;
    try {
      const old = await httpLogin(first.url);
      const oldTicket = `portcullis_ticket_${at}=${readConsoleAddress(dir)!.ticket}`;
      await first.stop();
      next = await startConsoleProcess(dir, ["--port", at]);
      expect(next.url).toBe(first.url);

      // The old session is none: views send to the login page, state changes are refused.
      const home = await raw(`${next.url}/grants`, { headers: { Cookie: old.cookie } });
      expect(home.status).toBe(303);
      expect(home.headers.location).toMatch(/^\/login/);
      const decide = await post(
        next.url,
        "/requests/01JQ7R4S4S0QJ7GZP1S2AAAAAA/decide",
        { csrf: old.csrf, proof: old.proofKey!, action: "deny" },
        { Cookie: old.cookie },
      );
      expect(decide.status).toBe(403);
      const audit = await post(
        next.url,
        "/audit/open",
        { csrf: old.csrf, proof: old.proofKey! },
        { Cookie: old.cookie },
      );
      expect(audit.status).toBe(403);

      // The old ticket is no ticket: with everyone's count at its limit it does not get past it,
      // while this run's ticket does.
      for (let i = 0; i < 5; i++) expect(await loginStatus(next.url, `wrong ${i}`)).toBe(401);
      expect(await sixthWrongThen(next.url, TEST_PASSPHRASE, [oldTicket])).toEqual([401, 429]);
      const ticket = `portcullis_ticket_${at}=${readConsoleAddress(dir)!.ticket}`;
      expect(ticket).not.toBe(oldTicket);
      expect(await loginStatus(next.url, TEST_PASSPHRASE, [ticket])).toBe(200);
    } finally {
      await first.stop();
      await next?.stop();
      removeDir(dir);
    }
  });
});

describe("the ticket caught by another user", () => {
  // The ticket passes through the opener's command line (xdg-open, the browser's), which other
  // users can list; the kernel's socket table names the client's user, and another user's
  // attempts share the count with everyone else's, ticket or not. Spawning another user's
  // process needs root. That user's five wrong passphrases cost nothing yet; if they are in
  // everyone's count, a sixth from this user (no ticket) is the one that starts the wait, and
  // the right passphrase sent with it waits (429); were they counted apart, the sixth would be
  // everyone's first and the right one would log in. Nothing here races the wait's second.
  it.skipIf(process.platform !== "linux" || process.getuid?.() !== 0)(
    "does not move that user's wrong passphrases out of everyone's count",
    async () => {
      const dir = newStateDir();
      const c = await startConsoleProcess(dir);
      try {
        const { ticket } = readConsoleAddress(dir)!;
        const ticketCookie = `portcullis_ticket_${new URL(c.url).port}=${ticket}`;
        expect(await attemptsAsNobody(c.url, ticketCookie, 5)).toEqual([401, 401, 401, 401, 401]);
        expect(await sixthWrongThen(c.url, TEST_PASSPHRASE)).toEqual([401, 429]);
        // the ticket's own count holds none of them: its holder logs in at once
        expect(await loginStatus(c.url, TEST_PASSPHRASE, [ticketCookie])).toBe(200);
      } finally {
        await c.stop();
        removeDir(dir);
      }
    },
  );
});

/**
 * `count` wrong-passphrase logins sent by a process of another user (nobody, 65534), with the
 * given Cookie besides the login form's: the statuses. Needs root to spawn it.
 */
async function attemptsAsNobody(base: string, cookie: string, count: number): Promise<number[]> {
  const script = `
    const http = require("node:http");
    const rq = (method, path, headers, body) => new Promise((res, rej) => {
      const r = http.request(process.env.BASE + path, { method, headers }, (rs) => {
        let d = ""; rs.on("data", (c) => (d += c)); rs.on("end", () => res({ s: rs.statusCode, h: rs.headers, b: d }));
      });
      r.on("error", rej); r.end(body);
    });
    (async () => {
      const out = [];
      for (let i = 0; i < ${count}; i++) {
        const form = await rq("GET", "/login", {});
        const csrf = /name="csrf" value="([^"]+)"/.exec(form.b)[1];
        const cookie = [form.h["set-cookie"][0].split(";")[0], process.env.COOKIE].join("; ");
        const body = new URLSearchParams({ csrf, passphrase: "wrong " + i }).toString();
        const r = await rq("POST", "/login", { origin: process.env.BASE, cookie, "content-type": "application/x-www-form-urlencoded" }, body);
        out.push(r.s);
      }
      console.log(JSON.stringify(out));
    })();`;
  const child = spawn(process.execPath, ["-e", script], {
    uid: 65534,
    gid: 65534,
    cwd: "/",
    env: { BASE: base, COOKIE: cookie, PATH: process.env.PATH ?? "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    err += d;
  });
  // the output read to its end, not only the exit: the JSON line is the last thing it writes
  const { code } = await exitWithOutput(child);
  expect(code, err).toBe(0);
  return JSON.parse(out) as number[];
}
