// Passkeys in the console as a person uses them: Debian's chromium with its virtual authenticator
// (DevTools protocol, WebAuthn domain: a platform authenticator with user verification), a real
// console process, a real gateway and a real MCP client whose calls wait for the decision.
import type { CDPSession } from "playwright-core";
import { describe, expect, it } from "vitest";
import { activeGrants } from "../../src/approval/grants.js";
import { atPasskeyOrigin } from "../../src/console/passkeyOrigin.js";
import { openStore } from "../../src/store/db.js";
import { nextRequest, nextStoredRequest, pending } from "../helpers/approvals.js";
import { SoftAuthenticator } from "../helpers/authenticator.js";
import { browserSuite, held } from "../helpers/browser.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import {
  catalogFile,
  DEPLOY_TOOL,
  gatewayFor,
  loginWithBrowser,
  type RawResponse,
  raw,
  reviewedIn,
  startConsoleProcess,
} from "./helpers.js";

const WIPE_TOOL = {
  name: "wipe",
  description: "Wipes the preview environment.",
  inputSchema: { type: "object", properties: { why: { type: "string" } } },
};

const suite = browserSuite();
const { cleanup } = suite;

/** Chromium's virtual authenticator: a platform passkey (Touch ID-like) that verifies its user. */
async function virtualAuthenticator(): Promise<CDPSession> {
  const cdp = await suite.browser.page.context().newCDPSession(suite.browser.page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  cleanup.push(async () => {
    await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId }).catch(() => {});
    await cdp.send("WebAuthn.disable").catch(() => {});
    await cdp.detach().catch(() => {});
  });
  return cdp;
}

/** A console process on a fresh state dir, and a dir for catalog files: all stopped or removed after the test. */
async function consoleOnFreshState() {
  const stateDir = newStateDir();
  const dir = tempDir("portcullis-passkey-tools-");
  const c = await startConsoleProcess(stateDir);
  cleanup.push(() => {
    removeDir(dir);
    removeDir(stateDir);
  });
  cleanup.push(() => c.stop());
  return { stateDir, dir, c };
}

/** A gateway on a catalog of `tools` whose client has listed them (closed after the test). */
async function listedGateway(stateDir: string, dir: string, tools: object[]) {
  const gw = await gatewayFor(stateDir, catalogFile(dir, tools));
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

async function setup() {
  const { stateDir, dir, c } = await consoleOnFreshState();
  const gw = await listedGateway(stateDir, dir, [DEPLOY_TOOL, WIPE_TOOL]);
  await virtualAuthenticator();
  return { stateDir, gw, base: c.url, local: atPasskeyOrigin(c.url) };
}

async function passkeys(stateDir: string): Promise<{ id: string; name: string; honoured: boolean }[]> {
  const r = await runCli(["passkey", "list", "--json", "--state-dir", stateDir]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).passkeys;
}

/**
 * The active grants, read from the store in this process as `portcullis grants` reads them (the
 * command is not what these tests are about; it was a process of its own at each look).
 */
async function grants(stateDir: string): Promise<{ grant: string; approvedBy: string }[]> {
  const db = openStore(stateDir);
  try {
    return activeGrants(db).map((g) => ({ grant: g.grant, approvedBy: g.approvedBy }));
  } finally {
    db.close();
  }
}

/** The page `portcullis passkey add` names, logged into with the passphrase; one passkey added. */
async function registerPasskey(stateDir: string, name: string): Promise<string> {
  const page = suite.browser.page;
  const add = await runCli(["passkey", "add", "--state-dir", stateDir]);
  expect(add.code, add.stderr).toBe(0);
  const url = /(http:\/\/\S+\/passkeys)/.exec(add.stdout)![1]!;
  expect(new URL(url).hostname).toBe("localhost");
  await loginWithBrowser(page, url);
  expect(page.url()).toBe(url);
  await page.getByTestId("passkey-name").fill(name);
  await page.getByTestId("passkey-register").click();
  await page.getByTestId("passkey").waitFor();
  const [p] = await passkeys(stateDir);
  expect(p).toMatchObject({ name, honoured: true });
  return p!.id;
}

/** A new session: the browser forgets the console's cookies, then proves the human with the passkey. */
async function loginWithPasskey(local: string): Promise<void> {
  const page = suite.browser.page;
  await suite.browser.context.clearCookies();
  await page.goto(`${local}/`);
  expect(new URL(page.url()).pathname).toBe("/login");
  await page.getByTestId("login-passkey").click();
  await page.waitForURL(`${local}/`);
  await expect(page.locator("nav .proof").textContent()).resolves.toContain("ask your passkey");
}

async function openCard(local: string, request: string) {
  const page = suite.browser.page;
  await page.goto(`${local}/requests/${request}`);
  const card = page.locator(`[data-testid="pending-request"][data-request-id="${request}"]`);
  await card.waitFor();
  return card;
}

describe("passkeys in the console", () => {
  it("registered after the passphrase, a passkey logs in, approves a held call and denies another", async () => {
    const { stateDir, gw, base, local } = await setup();
    const page = suite.browser.page;

    // At 127.0.0.1 the passkeys page sends the human to localhost (browsers refuse an IP as RP id).
    await page.goto(`${base}/passkeys`);
    expect(page.url()).toBe(`${local}/login?next=%2Fpasskeys`);
    const id = await registerPasskey(stateDir, "test key");

    // At 127.0.0.1 the login page sends a passkey to localhost, keeping where the human was going.
    await suite.browser.context.clearCookies();
    await page.goto(`${base}/requests/someid`);
    expect(await page.getByTestId("login-passkey").getAttribute("href")).toBe(
      `${local}/login?next=%2Frequests%2Fsomeid`,
    );

    // Logged in with the passkey alone: no passphrase signer, every decision asks the passkey.
    await loginWithPasskey(local);
    const seen = new Set<string>();
    const first = held(gw.client.callTool({ name: "deploy", arguments: { note: "first" } }));
    const req1 = await nextStoredRequest(stateDir, seen);
    const card1 = await openCard(local, req1.request);
    await card1.getByTestId("approve-session").click();
    await page.waitForSelector("p.outcome");
    expect(await page.locator("p.outcome").textContent()).toMatch(/^approved.*passkey "test key"/);
    expect((await first).isError).toBeFalsy();
    const [grant] = await grants(stateDir);
    expect(grant!.approvedBy).toContain(`passkey "test key" (${id.slice(0, 12)}`);

    // The session grant covers the next call of the tool: the gateway honoured the passkey's grant.
    expect((await gw.client.callTool({ name: "deploy", arguments: { note: "again" } })).isError).toBeFalsy();

    const wipe = gw.client.callTool({ name: "wipe", arguments: { why: "test" } }).catch((e) => e);
    const req2 = await nextStoredRequest(stateDir, seen);
    const card2 = await openCard(local, req2.request);
    await card2.getByTestId("deny-reason").fill("not today");
    await card2.getByTestId("deny").click();
    await page.waitForSelector("p.outcome");
    expect(await page.locator("p.outcome").textContent()).toContain("not today");
    const denied = (await wipe) as { data: Record<string, unknown> };
    expect(denied.data).toMatchObject({ error: "approval_denied", reason: "denied: not today" });
    expect((await passkeys(stateDir))[0]!.honoured).toBe(true);
    expect(suite.browser.errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
  });

  it("a removed passkey decides nothing: its answer is refused and its grant stops covering calls", async () => {
    const { stateDir, gw, local } = await setup();
    const page = suite.browser.page;
    const id = await registerPasskey(stateDir, "lost key");
    await loginWithPasskey(local);

    // A passkey-only session holds no approver key: adding another passkey asks the passphrase.
    await page.goto(`${local}/passkeys`);
    await page.getByTestId("passkey-passphrase").fill("not the passphrase");
    await page.getByTestId("passkey-register").click();
    const problem = page.getByTestId("passkey-error");
    await problem.waitFor();
    expect(await problem.textContent()).toContain("wrong passphrase");
    expect(await passkeys(stateDir)).toHaveLength(1);

    const seen = new Set<string>();
    const first = held(gw.client.callTool({ name: "deploy", arguments: {} }));
    const req1 = await nextStoredRequest(stateDir, seen);
    await (await openCard(local, req1.request)).getByTestId("approve-session").click();
    await page.waitForSelector("p.outcome");
    expect((await first).isError).toBeFalsy();

    // A card on screen, then the passkey is removed elsewhere (the terminal): the click that
    // follows makes the authenticator answer, and the answer is not honoured.
    const wipe = held(gw.client.callTool({ name: "wipe", arguments: {} }));
    const req2 = await nextStoredRequest(stateDir, seen);
    const card = await openCard(local, req2.request);
    await card.getByTestId("deny-reason").fill("typing keeps this page as it is");
    const rm = await runCli(["passkey", "rm", id, "--state-dir", stateDir]);
    expect(rm.code, rm.stderr).toBe(0);
    await card.getByTestId("approve-call").click();
    const error = page.getByTestId("passkey-error");
    await error.waitFor();
    expect(await error.textContent()).toMatch(/no authority/);
    expect((await nextRequest(stateDir, new Set())).request).toBe(req2.request);

    // The grant it approved before no longer covers the tool: the next deploy asks again.
    const again = held(gw.client.callTool({ name: "deploy", arguments: {} }));
    const req3 = await nextStoredRequest(stateDir, seen);
    expect(req3.tool).toBe("deploy");
    expect(await grants(stateDir)).toEqual([]);
    await gw.close();
    await Promise.allSettled([wipe, again]);
  });
});

describe("the passkey routes' edges", () => {
  /** Requests to the console as a page at `host` would send them (node connects to 127.0.0.1). */
  function client(port: number, host: string) {
    let cookies: string[] = [];
    const keep = (r: RawResponse) => {
      const set = r.headers["set-cookie"];
      for (const c of Array.isArray(set) ? set : set ? [set] : []) {
        const pair = c.split(";")[0]!;
        const name = pair.split("=")[0]!;
        cookies = [
          ...cookies.filter((k) => !k.startsWith(`${name}=`)),
          ...(c.includes("Max-Age=0") ? [] : [pair]),
        ];
      }
      return r;
    };
    const headers = (extra: Record<string, string>) => ({
      Host: host,
      Origin: `http://${host}`,
      ...(cookies.length ? { Cookie: cookies.join("; ") } : {}),
      ...extra,
    });
    return {
      get: async (path: string) =>
        keep(await raw(`http://127.0.0.1:${port}${path}`, { headers: headers({}) })),
      form: async (path: string, fields: Record<string, string>) =>
        keep(
          await raw(`http://127.0.0.1:${port}${path}`, {
            method: "POST",
            headers: headers({ "Content-Type": "application/x-www-form-urlencoded" }),
            body: new URLSearchParams(fields).toString(),
          }),
        ),
      json: async (path: string, body: unknown, csrf?: string) =>
        keep(
          await raw(`http://127.0.0.1:${port}${path}`, {
            method: "POST",
            headers: headers({
              "Content-Type": "application/json",
              ...(csrf ? { "X-CSRF-Token": csrf } : {}),
            }),
            body: JSON.stringify(body),
          }),
        ),
    };
  }
  const csrfOf = (body: string) => /name="csrf" value="([^"]+)"/.exec(body)![1]!;
  const passphrase = "correct horse battery staple";
  type Client = ReturnType<typeof client>;

  /** Logs `c` in with the passphrase through the login form: the token of its session's pages. */
  async function passphraseLogin(c: Client): Promise<string> {
    const token = csrfOf((await c.get("/login")).body);
    expect((await c.form("/login", { csrf: token, passphrase })).status).toBe(200);
    return csrfOf((await c.get("/")).body);
  }

  /** An approve-session ceremony for `request`, prepared as its page asks (with the review's digest): its challenge. */
  async function preparedChallenge(c: Client, request: string, csrf: string): Promise<string> {
    const reviewed = reviewedIn((await c.get(`/requests/${request}`)).body);
    const prepared = await c.json(
      `/requests/${request}/passkey/options`,
      { action: "approve-session", reviewed },
      csrf,
    );
    expect(prepared.status, prepared.body).toBe(200);
    return (JSON.parse(prepared.body) as { options: { challenge: string } }).options.challenge;
  }

  it("refuses ceremonies away from localhost, without the token, not started here, or answered by an unknown passkey", async () => {
    const { stateDir, dir, c } = await consoleOnFreshState();
    const port = Number(new URL(c.url).port);
    const local = client(port, `localhost:${port}`);
    const ip = client(port, `127.0.0.1:${port}`);

    // Logging in with a passkey needs the login form's token, like the passphrase.
    const loginToken = csrfOf((await local.get("/login")).body);
    expect((await local.json("/login/passkey/options", {})).status).toBe(403);
    const noPasskey = await local.json("/login/passkey/options", {}, loginToken);
    expect(noPasskey.status).toBe(409);
    const fake = new SoftAuthenticator();
    const made = fake.assert("bm90LWlzc3VlZC1oZXJl", {
      origin: `http://localhost:${port}`,
      rpId: "localhost",
    });
    const notStarted = await local.json("/login/passkey", { response: made }, loginToken);
    expect(notStarted.status).toBe(400);
    expect(notStarted.body).toContain("not started here");

    // A passphrase session; its passkey routes are refused at 127.0.0.1 (an IP is no RP id).
    const csrf = await passphraseLogin(ip);
    const atIp = await ip.json("/passkeys/options", {}, csrf);
    expect(atIp.status).toBe(400);
    expect(atIp.body).toContain(`http://localhost:${port}`);

    // A pending request, decided with an answer to a challenge this console never prepared, then
    // with an unregistered passkey's answer to the one it did: both refused, still pending.
    const gw = await listedGateway(stateDir, dir, [DEPLOY_TOOL]);
    const call = held(gw.client.callTool({ name: "deploy", arguments: {} }));
    const req = await nextStoredRequest(stateDir);
    const lcsrf = await passphraseLogin(local);
    const path = `/requests/${req.request}/passkey`;
    const forged = await local.json(path, { response: made }, lcsrf);
    expect(forged.status).toBe(400);
    // Only the three actions: not a name every object has.
    for (const action of ["constructor", "toString", "approve"]) {
      expect((await local.json(`${path}/options`, { action }, lcsrf)).status).toBe(400);
    }
    expect(
      (await local.form(`/requests/${req.request}/decide`, { csrf: lcsrf, action: "constructor" })).status,
    ).toBe(400);
    // Without the digest of the review the page showed, nothing is prepared; with it, it is.
    expect((await local.json(`${path}/options`, { action: "approve-session" }, lcsrf)).status).toBe(400);
    const challenge = await preparedChallenge(local, req.request, lcsrf);
    const answer = fake.assert(challenge, { origin: `http://localhost:${port}`, rpId: "localhost" });
    const unknown = await local.json(path, { response: answer }, lcsrf);
    expect(unknown.status).toBe(401);
    expect(unknown.body).toContain("no authority");
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([req.request]);
    // This session holds a passphrase proof, but the requests above never brought its key (as a
    // process holding only the session cookie would not): no passkey is added with it.
    const stolen = await local.json("/passkeys/options", {}, lcsrf);
    expect(stolen.status).toBe(401);
    expect(stolen.body).toContain("needs the passphrase");
    await gw.close();
    await call.catch(() => {});
  });

  it("an answer posted to another request's route leaves the ceremony to its own request, which it decides once", async () => {
    const { stateDir, dir, c } = await consoleOnFreshState();
    const port = Number(new URL(c.url).port);
    const origin = `http://localhost:${port}`;
    const local = client(port, `localhost:${port}`);
    const csrf = await passphraseLogin(local);
    // A passkey added over the routes, as the page's script does (the passphrase in the request).
    const key = new SoftAuthenticator();
    const started = await local.json("/passkeys/options", { passphrase }, csrf);
    expect(started.status, started.body).toBe(200);
    const { options: creation } = JSON.parse(started.body);
    const added = await local.json(
      "/passkeys/register",
      { response: key.register(creation, { origin }), name: "desk key" },
      csrf,
    );
    expect(added.status, added.body).toBe(200);

    const gw = await listedGateway(stateDir, dir, [DEPLOY_TOOL]);
    const call = held(gw.client.callTool({ name: "deploy", arguments: {} }));
    const req = await nextStoredRequest(stateDir);
    const path = `/requests/${req.request}/passkey`;
    const answer = key.assert(await preparedChallenge(local, req.request, csrf), {
      origin,
      rpId: "localhost",
    });
    // Posted to another request's route (a page or agent holding the session cookie, or a
    // mistake): refused, and the human's own ceremony is still there for the right route.
    const wrong = await local.json(
      "/requests/01JQ7R4S4S0QJ7GZP1S2NOTHERE/passkey",
      { response: answer },
      csrf,
    );
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain("not prepared here");
    const right = await local.json(path, { response: answer }, csrf);
    expect(right.status, right.body).toBe(200);
    expect(((await call) as { isError?: boolean }).isError).toBeFalsy();
    // Used once: the same answer again finds no ceremony.
    const replay = await local.json(path, { response: answer }, csrf);
    expect(replay.status).toBe(400);
    expect(replay.body).toContain("not prepared here");
    await gw.close();
  });
});
