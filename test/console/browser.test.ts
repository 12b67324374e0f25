// The console as a person uses it: Debian's chromium (playwright-core) against a console that a
// real gateway started on demand, with a real MCP client whose calls wait for the decision.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { activeGrants as activeGrantsOf } from "../../src/approval/grants.js";
import { openStore } from "../../src/store/db.js";
import { pending, storedPending, waitForPending } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import {
  catalogFile,
  consoleOf,
  DEPLOY_TOOL,
  gatewayFor,
  handedProofKey,
  loginWithBrowser,
  post,
  raw,
  reviewedIn,
  startConsoleProcess,
  stopConsoleOf,
} from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

function refusal(e: unknown) {
  return e as { code: number; message: string; data: Record<string, unknown> };
}

/**
 * One shop for the cases that decide its requests (a state directory, a gateway before the catalog
 * fixture serving the deploy tool and the hostile `render` tool, and the console the gateway
 * starts on demand), started by the first case that asks and ended after the file: each was a
 * gateway, its fixture and a console of their own per case (about 2 s of start each). The cases
 * share nothing a case looks at: each one's request is decided before it ends, the grants they
 * approve are revoked in the case, and the browser's cookies are cleared between cases (so each
 * logs in afresh). The one case that leaves a session grant behind ("the session cookie on another
 * port") runs last. The case of a page that changes under the pointer keeps a state directory of
 * its own (it says why).
 */
let shop: Promise<{ stateDir: string; gw: Awaited<ReturnType<typeof gatewayFor>> }> | undefined;

function setup() {
  shop ??= (async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-console-tools-");
    shopCleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    shopCleanup.push(() => stopConsoleOf(stateDir));
    const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL, EVIL_TOOL]));
    shopCleanup.push(() => gw.close());
    await gw.client.listTools();
    return { stateDir, gw };
  })();
  return shop;
}
const shopCleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of shopCleanup.splice(0).reverse()) await c();
});

/** A tool whose description is markup, links and invisible characters ("untrusted text"). */
const EVIL_TOOL = {
  name: "render",
  description:
    'Renders. <script>alert("desc")</script><img src=x onerror=alert("img")> [docs](javascript:alert("link")) ' +
    "<a href=\"javascript:alert('a')\">click</a> safe\u202Etxt.exe and hid\u200Bden",
  inputSchema: {
    type: "object",
    properties: {
      html: { type: "string" },
      link: { type: "string" },
      "\u202Ename": { type: "string" },
    },
  },
};

/**
 * The active grants, read from the store in this process as `portcullis grants` reads them: the
 * command is not what these tests are about, and it was a process of its own (about 0.3 s of CPU)
 * at each look. test/console/security.test.ts reads them so too.
 */
async function activeGrants(stateDir: string): Promise<{ grant: string; mode: string }[]> {
  const db = openStore(stateDir);
  try {
    return activeGrantsOf(db).map((g) => ({ grant: g.grant, mode: g.mode }));
  } finally {
    db.close();
  }
}

describe("deciding in the console", () => {
  it("log in from the request's page, approve for the session; revoke; approve one call; deny with a reason", async () => {
    const { stateDir, gw } = await setup();
    const page = suite.browser.page;

    // A waiting call starts the console; the gateway says where the request is decided.
    const first = held(gw.client.callTool({ name: "deploy", arguments: { note: "first" } }));
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const base = await consoleOf(stateDir);
    const line = await gw.waitForStderr(/review and decide it in the console: (\S+)/, 20_000);
    expect(line).toContain(`${base}/requests/${req.request}`);

    // Nothing before the passphrase: the request page sends the human to log in, then back.
    await page.goto(`${base}/requests/${req.request}`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await expect(page.getByTestId("pending-request").count()).resolves.toBe(0);
    await page.getByTestId("login-passphrase").fill("correct horse battery staple");
    await page.getByTestId("login-submit").click();
    await page.waitForURL(`${base}/requests/${req.request}`);

    const card = page.locator(`[data-testid="pending-request"][data-request-id="${req.request}"]`);
    await expect(card.textContent()).resolves.toContain("deploy");
    const text = (await card.textContent())!;
    expect(text).toContain("Who asks");
    expect(text).toContain('"first"');
    // the tool with its default and enum visible; the effective arguments, the default the call
    // left out filled in and said to be one; the credential scopes (none for this tool)
    expect(text).toContain('target: string, default "preview" (enum preview|production)');
    expect(text).toContain("Arguments (schema defaults applied, secrets redacted)");
    expect(text).toMatch(/target"preview"[^\n]*schema default/);
    expect(text).toContain("credential scopes (none)");
    await card.getByTestId("approve-session").click();
    await page.waitForSelector("p.outcome");
    expect(await page.locator("p.outcome").textContent()).toMatch(/^approved/);
    expect((await first).isError).toBeFalsy();

    // The session grant covers the next call: no new request.
    expect((await gw.client.callTool({ name: "deploy", arguments: { note: "second" } })).isError).toBeFalsy();
    expect(await pending(stateDir)).toEqual([]);

    // Revoke it in the console: the next call asks again.
    const [grant] = await activeGrants(stateDir);
    await page.goto(`${base}/grants`);
    const row = page.locator(`[data-testid="grant"][data-grant-id="${grant!.grant}"]`);
    await row.getByTestId("revoke").click();
    await page.waitForURL(`${base}/grants`);
    await expect(page.locator('[data-testid="grant"]').count()).resolves.toBe(0);
    expect(await activeGrants(stateDir)).toEqual([]);

    // The list page updates itself (server-sent events) when the next call asks.
    await page.goto(base);
    await expect(page.getByTestId("pending-request").count()).resolves.toBe(0);
    const third = held(gw.client.callTool({ name: "deploy", arguments: { note: "third" } }));
    const live = page.getByTestId("pending-request");
    await live.waitFor();
    const thirdId = await live.getAttribute("data-request-id");
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([thirdId]);
    await live.getByTestId("approve-call").click();
    await page.waitForSelector("p.outcome");
    expect((await third).isError).toBeFalsy();
    // For this call only: nothing remembered, the next call asks again.
    expect(await activeGrants(stateDir)).toEqual([]);

    const fourth = gw.client.callTool({ name: "deploy", arguments: { note: "fourth" } }).catch((e) => e);
    await page.goto(base);
    const card4 = page.getByTestId("pending-request");
    await card4.waitFor();
    await card4.getByTestId("deny-reason").fill("not on a Friday");
    await card4.getByTestId("deny").click();
    await page.waitForSelector("p.outcome");
    expect(await page.locator("p.outcome").textContent()).toContain("not on a Friday");
    const denied = refusal(await fourth);
    expect(denied.data).toMatchObject({ error: "approval_denied", reason: "denied: not on a Friday" });
    expect(suite.browser.dialogs).toEqual([]);
  });
});

describe("the proven window", () => {
  it("once it has passed, a decision asks for the passphrase again (a wrong one decides nothing)", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-console-tools-");
    const c = await startConsoleProcess(stateDir, ["--proof-window", "1"]);
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    cleanup.push(() => c.stop());
    const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]));
    cleanup.push(() => gw.close());
    const page = suite.browser.page;
    await loginWithBrowser(page, c.url);
    const proven = Date.now(); // the proof was made before the login's answer came

    const call = held(gw.client.callTool({ name: "deploy", arguments: {} }));
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    await sleep(proven + 1500 - Date.now()); // the one-second window passes (counted from the login)
    await page.goto(`${c.url}/requests/${req.request}`);
    await page.getByTestId("approve-session").click();
    await page.getByTestId("decision-proof").fill("not the passphrase");
    await page.getByTestId("decision-submit").click();
    await expect(page.locator(".error").textContent()).resolves.toContain("wrong passphrase");
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([req.request]);

    await page.getByTestId("decision-proof").fill("correct horse battery staple");
    await page.getByTestId("decision-submit").click();
    await page.waitForSelector("p.outcome");
    expect((await call).isError).toBeFalsy();
    expect(await activeGrants(stateDir)).toHaveLength(1);
  });
});

describe("the printed link", () => {
  it("sets the ticket cookie, drops the ticket from the URL, and the login the browser posts carries it", async () => {
    const stateDir = newStateDir();
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => removeDir(stateDir));
    cleanup.push(() => c.stop());
    const printed = await runCli(["console", "--no-open", "--state-dir", stateDir]);
    const link = /already running at (\S+)/.exec(printed.stdout)![1]!;
    expect(link).toMatch(/\?ticket=[A-Za-z0-9_-]{43}$/);

    const page = suite.browser.page;
    await page.goto(link);
    expect(page.url()).toBe(`${c.url}/login`);
    const cookies = await suite.browser.context.cookies(c.url);
    const ticket = cookies.find((k) => k.name === `portcullis_ticket_${new URL(c.url).port}`);
    expect(ticket).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/" });
    expect(link).toContain(`?ticket=${ticket!.value}`);

    // The strict cookie goes with the login form the browser posts: its attempts are counted
    // apart from everyone else's (the lockout itself: security.test.ts, "failed logins").
    const posted = page.waitForRequest((r) => r.method() === "POST" && r.url() === `${c.url}/login`);
    await page.getByTestId("login-passphrase").fill("correct horse battery staple");
    await page.getByTestId("login-submit").click();
    expect((await (await posted).allHeaders()).cookie).toContain(`${ticket!.name}=${ticket!.value}`);
    await page.waitForURL(`${c.url}/`);
  });
});

describe("untrusted text", () => {
  it("<script>, javascript: URLs, bidi and zero-width characters in a tool description and in arguments render inert and visible", async () => {
    const { stateDir, gw } = await setup();
    const call = held(
      gw.client.callTool({
        name: "render",
        arguments: {
          html: '<script>alert("arg")</script><svg onload=alert("svg")>',
          link: 'javascript:alert("arg-link")',
          "\u202Ename": "ab\u200Bcd\u2066e",
        },
      }),
    );
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const base = await consoleOf(stateDir);
    const page = suite.browser.page;
    await loginWithBrowser(page, `${base}/requests/${req.request}`);
    const card = page.getByTestId("pending-request");
    await card.waitFor();

    for (const path of [`/requests/${req.request}`, "/", "/catalog?label=shop"]) {
      await page.goto(`${base}${path}`);
      // biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator: the text as rendered
      const shown = await page.locator("main").innerText();
      if (path !== "/catalog?label=shop") {
        expect(shown).toContain('<script>alert("desc")</script>');
        expect(shown).toContain('<img src=x onerror=alert("img")>');
        expect(shown).toContain('<script>alert(\\"arg\\")</script>');
        expect(shown).toContain("javascript:alert");
      }
      // Invisible and reordering characters are never passed through; they are shown as marks.
      expect(shown).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200B-\u200F]/);
      // Nothing became markup: our one script, no image, no svg, no javascript: link, no handler.
      expect(await page.locator("script").count()).toBe(1);
      expect(await page.locator("script").getAttribute("src")).toMatch(
        /^\/static\/[0-9a-f]{16}\/console\.js$/,
      );
      expect(await page.locator("main img, main svg, main iframe").count()).toBe(0);
      expect(await page.locator('a[href^="javascript:" i]').count()).toBe(0);
      expect(await page.locator("[onerror], [onload], [onclick]").count()).toBe(0);
    }
    await page.goto(`${base}/requests/${req.request}`);
    // biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator: the text as rendered
    const shown = await page.locator("main").innerText();
    expect(shown).toMatch(/⟦U\+202E⟧|\\u202e/);
    expect(shown).toMatch(/⟦U\+200B⟧|\\u200b/);
    await page.getByTestId("deny").click();
    await page.waitForSelector("p.outcome");
    await call.catch(() => {});
    expect(suite.browser.dialogs).toEqual([]);
  });
});

describe("the deny reason", () => {
  it("Enter in the reason field denies (it never submits the form's first button, an approval)", async () => {
    const { stateDir, gw } = await setup();
    const call = gw.client.callTool({ name: "deploy", arguments: {} }).catch((e) => e);
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const base = await consoleOf(stateDir);
    const page = suite.browser.page;
    await loginWithBrowser(page, `${base}/requests/${req.request}`);
    const card = page.getByTestId("pending-request");
    // a page just loaded holds its forms for a second, as after a swap (assets.ts)
    await page.waitForSelector("main#live:not([data-settling])");
    await card.getByTestId("deny-reason").fill("pressed Enter");
    await card.getByTestId("deny-reason").press("Enter");
    await page.waitForSelector("p.outcome");
    expect(await page.locator("p.outcome").textContent()).toMatch(/^denied.*pressed Enter/);
    expect(refusal(await call).data).toMatchObject({ error: "approval_denied" });
    expect(await activeGrants(stateDir)).toEqual([]);
  });
});

describe("cookies of the same name from another port", () => {
  it("a local web server's junk session cookies scoped to /requests and /grants hide nothing: the human logs in, decides and revokes", async () => {
    const { stateDir, gw } = await setup();
    const page = suite.browser.page;
    const call = held(gw.client.callTool({ name: "deploy", arguments: { note: "shadowed?" } }));
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const base = await consoleOf(stateDir);
    const port = new URL(base).port;

    // The agent's dev server on another loopback port names its cookies like the console's, with
    // longer paths: for those paths the browser sends them before the real session cookie.
    const junk = ["/requests", "/grants", "/events", "/login/passkey"].map(
      (path) => `portcullis_session_${port}=junk; Path=${path}; HttpOnly; SameSite=Lax`,
    );
    const dev = createServer((_r, res) => {
      res.setHeader("Set-Cookie", [...junk, `portcullis_login_${port}=junk; Path=/login/passkey`]);
      res.end("my dev app");
    });
    await new Promise<void>((r) => dev.listen(0, "127.0.0.1", r));
    cleanup.push(
      () =>
        new Promise<void>((r) => {
          dev.close(() => r());
          dev.closeAllConnections();
        }),
    );
    await page.goto(`http://127.0.0.1:${(dev.address() as AddressInfo).port}/`);
    const shadows = (await suite.browser.context.cookies())
      .filter((c) => c.name === `portcullis_session_${port}`)
      .map((c) => c.path);
    expect(shadows).toEqual(expect.arrayContaining(["/requests", "/grants"]));

    // The link the gateway prints: to the login page and back to the request, no redirect loop.
    await loginWithBrowser(page, `${base}/requests/${req.request}`);
    expect(page.url()).toBe(`${base}/requests/${req.request}`);
    const card = page.locator(`[data-testid="pending-request"][data-request-id="${req.request}"]`);
    await card.getByTestId("approve-session").click();
    await page.waitForSelector("p.outcome");
    expect(await page.locator("p.outcome").textContent()).toMatch(/^approved/);
    expect((await call).isError).toBeFalsy();

    const [grant] = await activeGrants(stateDir);
    await page.goto(`${base}/grants`);
    await page
      .locator(`[data-testid="grant"][data-grant-id="${grant!.grant}"]`)
      .getByTestId("revoke")
      .click();
    await page.waitForURL(`${base}/grants`);
    expect(await activeGrants(stateDir)).toEqual([]);
    expect(suite.browser.dialogs).toEqual([]);
  });
});

describe("a page that changes under the pointer", () => {
  // The attack: request A (harmless) and B (production) wait, one under the other. The human
  // reads A and rests the pointer on its "Approve this call"; the agent ends A's gateway, A's card
  // goes, and B's card moves up under the pointer. A click then approves B, unread.
  it("waits while the pointer rests on a control, and a decision in the second after a swap decides nothing", async () => {
    // B is asked first, A after it: the list is newest first, so A's card is drawn above B's. Both
    // from gateways of their own state directory: where B's card comes from a gateway whose run
    // made earlier requests, it is drawn another height than A's, and the swap puts no card under
    // the point.
    const stateDir = newStateDir();
    const dirB = tempDir("portcullis-console-tools-");
    cleanup.push(() => {
      removeDir(dirB);
      removeDir(stateDir);
    });
    cleanup.push(() => stopConsoleOf(stateDir));
    const gwB = await gatewayFor(stateDir, catalogFile(dirB, [DEPLOY_TOOL]));
    cleanup.push(() => gwB.close());
    await gwB.client.listTools();
    const page = suite.browser.page;
    const callB = held(
      gwB.client.callTool({ name: "deploy", arguments: { target: "production", note: "B" } }),
    );
    const b = await waitForPending(stateDir, (l) => l[0], 20_000, "request B", storedPending);
    const dirA = tempDir("portcullis-console-tools-");
    cleanup.push(() => removeDir(dirA));
    const gwA = await gatewayFor(stateDir, catalogFile(dirA, [DEPLOY_TOOL]));
    cleanup.push(() => gwA.close());
    await gwA.client.listTools();
    const callA = held(gwA.client.callTool({ name: "deploy", arguments: { note: "harmless" } }));
    const a = await waitForPending(
      stateDir,
      (l) => l.find((p) => p.request !== b.request),
      20_000,
      "request A",
      storedPending,
    );

    await loginWithBrowser(page, await consoleOf(stateDir));
    const cardOf = (id: string) => page.locator(`[data-testid="pending-request"][data-request-id="${id}"]`);
    await cardOf(b.request).waitFor();
    const approveA = cardOf(a.request).getByTestId("approve-call");
    await approveA.hover();
    const box = (await approveA.boundingBox())!;
    const point = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
    // In-page code is given as text: the tests' types have no DOM.
    const ARTICLE_AT = `document.elementFromPoint(${point.x}, ${point.y})?.closest("article")?.getAttribute("data-request-id") ?? null`;
    const under = () => page.evaluate(ARTICLE_AT);

    // A's gateway ends: A is withdrawn. The page learns of it and waits, saying so.
    await gwA.close();
    await callA.catch(() => {});
    await waitFor(async () => (await pending(stateDir)).length === 1, 20_000, "request A withdrawn");
    const notice = page.locator("#stale");
    await notice.waitFor();
    expect(await notice.textContent()).toMatch(/once the pointer leaves/);
    expect(await under()).toBe(a.request);
    await expect(cardOf(a.request).count()).resolves.toBe(1);

    // The moment the page is swapped, B's card is under the point, every button is off, and a
    // form submitted then (as Enter in a field would) is held.
    await page.evaluate(`(() => {
      const main = document.getElementById("live");
      const seen = new MutationObserver(() => {
        seen.disconnect();
        const buttons = [...main.querySelectorAll("form button")];
        const form = main.querySelector('[data-request-id="${b.request}"] form');
        form.requestSubmit(form.querySelector('[data-testid="approve-call"]'));
        window.seenAtSwap = {
          under: ${ARTICLE_AT},
          settling: main.hasAttribute("data-settling"),
          buttons: buttons.length,
          enabled: buttons.filter((x) => !x.disabled).length,
        };
      });
      seen.observe(main, { childList: true });
    })()`);
    await page.mouse.move(5, 5);
    const atSwap = await page.waitForFunction(() => (globalThis as { seenAtSwap?: unknown }).seenAtSwap);
    expect(await atSwap.jsonValue()).toEqual({ under: b.request, settling: true, buttons: 3, enabled: 0 });
    expect(await notice.textContent()).toMatch(/nothing was decided/);
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([b.request]);

    // A second later the buttons are back, and B is decided as the human means to.
    await page.waitForSelector("#live:not([data-settling])");
    await cardOf(b.request).getByTestId("deny-reason").fill("not this one");
    await cardOf(b.request).getByTestId("deny").click();
    await page.waitForSelector("p.outcome");
    expect(refusal(await callB.catch((e) => e)).data).toMatchObject({ error: "approval_denied" });
    expect(suite.browser.dialogs).toEqual([]);
  });
});

// Last: its session grant stays with the shared shop's gateway (an earlier case's call would be
// covered by it and ask no one).
describe("the session cookie on another port", () => {
  it("reaches any local web server the human visits, and decides nothing there: the held proof needs the page's key", async () => {
    const { stateDir, gw } = await setup();
    const page = suite.browser.page;
    const call = held(gw.client.callTool({ name: "deploy", arguments: { note: "stolen?" } }));
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const base = await consoleOf(stateDir);
    await loginWithBrowser(page, base);

    // The agent's dev server on another loopback port: browsers send it the console's cookies.
    let seen = "";
    const thief = createServer((r, res) => {
      seen = r.headers.cookie ?? "";
      res.end("hello");
    });
    await new Promise<void>((r) => thief.listen(0, "127.0.0.1", r));
    cleanup.push(
      () =>
        new Promise<void>((r) => {
          // The browser keeps its connection alive: closing waits for it unless it is cut.
          thief.close(() => r());
          thief.closeAllConnections();
        }),
    );
    await page.goto(`http://127.0.0.1:${(thief.address() as AddressInfo).port}/`);
    const port = new URL(base).port;
    const cookie = seen.split("; ").find((c) => c.startsWith(`portcullis_session_${port}=`));
    expect(cookie, seen).toBeDefined();

    // With it, the agent reads a page (and its CSRF token) and posts the decision as the page would.
    const card = await raw(`${base}/requests/${req.request}`, { headers: { Cookie: cookie! } });
    const csrf = /name="csrf" value="([^"]+)"/.exec(card.body)![1]!;
    const reviewed = reviewedIn(card.body);
    const forged = await post(
      base,
      `/requests/${req.request}/decide`,
      { csrf, reviewed, action: "approve-session" },
      { Cookie: cookie! },
    );
    expect(forged.status).toBe(200);
    expect(forged.body).toContain("Prove it is you");
    expect(handedProofKey(forged.body)).toBeNull();
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([req.request]);
    // The sealed audit does not open with the held proof either.
    // (asked for the passphrase, saying the held proof is this browser's: nothing was tried)
    const audit = await post(base, "/audit/open", { csrf }, { Cookie: cookie! });
    expect(audit.status).toBe(200);
    expect(audit.body).toContain("did not bring its key");
    expect(audit.body).not.toContain("<h2>Sessions</h2>");

    // The human's page has the key: the same decision goes through without the passphrase.
    await page.goto(`${base}/requests/${req.request}`);
    await page.getByTestId("approve-session").click();
    await page.waitForSelector("p.outcome");
    expect(await page.locator("p.outcome").textContent()).toMatch(/^approved/);
    expect((await call).isError).toBeFalsy();
  });
});
