// A hostile page in the human's browser, while the human is logged in to the console (the proof
// held for its window): the agent's dev server on another loopback port, which is the same *site*
// as the console (ports make no sites), so the browser sends it the console's SameSite=Strict
// session cookie and sends that cookie along with the page's own requests to the console. What
// the page tries, each in a real browser (Chromium): read the pending list (fetch with
// credentials, a no-cors fetch, the event stream, a WebSocket), show the console in a frame to
// click-jack it (iframe, object), and post a decision with a form that carries the session's
// real CSRF token and review digest (its server read them with the cookie the browser sent it).
// Each reads nothing and decides nothing: the request stays pending, and the human's own page
// then decides it with one click.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { storedPending, waitForPending } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { consoleGateway, consoleOf, DEPLOY_TOOL, loginWithBrowser, raw, reviewedIn } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

/** The page's script: each attack's outcome in `window.outcomes`, `window.done` once all ended. */
function attackScript(base: string, request: string): string {
  const ws = base.replace(/^http/, "ws");
  return `
window.outcomes = {};
function settle(name, p) {
  return p.then(function (v) { window.outcomes[name] = v; }, function (e) { window.outcomes[name] = "refused: " + (e && e.name); });
}
function stream() {
  return new Promise(function (resolve) {
    var es = new EventSource(${JSON.stringify(`${base}/events`)}, { withCredentials: true });
    es.onmessage = function () { es.close(); resolve("read a message"); };
    es.addEventListener("change", function () { es.close(); resolve("read a change"); });
    es.onopen = function () { es.close(); resolve("opened"); };
    es.onerror = function () { es.close(); resolve("error"); };
  });
}
function socket() {
  return new Promise(function (resolve) {
    var s = new WebSocket(${JSON.stringify(`${ws}/events`)});
    s.onopen = function () { s.close(); resolve("opened"); };
    s.onmessage = function () { resolve("read a message"); };
    s.onerror = function () { resolve("error"); };
    s.onclose = function () { resolve("closed"); };
  });
}
Promise.all([
  settle("fetch", fetch(${JSON.stringify(`${base}/`)}, { credentials: "include" }).then(function (r) { return r.text(); }).then(function (t) { return "read " + t.length + " characters"; })),
  settle("fetchRequest", fetch(${JSON.stringify(`${base}/requests/${request}`)}, { credentials: "include" }).then(function (r) { return r.text(); }).then(function (t) { return "read " + t.length + " characters"; })),
  settle("noCors", fetch(${JSON.stringify(`${base}/requests/${request}`)}, { mode: "no-cors", credentials: "include" }).then(function (r) { return r.text().then(function (t) { return r.type + " " + t.length; }); })),
  settle("events", stream()),
  settle("socket", socket()),
]).then(function () { window.done = true; });
`;
}

describe("a page on another loopback port while the human is logged in", () => {
  it("reads nothing of the console, cannot frame it, and its form post decides nothing", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [DEPLOY_TOOL]);
    const call = held(gw.client.callTool({ name: "deploy", arguments: { target: "production", note: "x" } }));
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const base = await consoleOf(stateDir);
    const port = new URL(base).port;
    const page = suite.browser.page;
    await loginWithBrowser(page, base);

    // The dev server: every request of the page to it carries the console's session cookie, with
    // which the server reads the request's page (its CSRF token and review digest), as any local
    // process can (docs/security.md, "The session cookie alone decides nothing").
    let stolen = "";
    let seenAtConsole: string[] = [];
    const pageOf = async (r: IncomingMessage): Promise<string> => {
      const cookie = (r.headers.cookie ?? "")
        .split("; ")
        .find((c) => c.startsWith(`portcullis_session_${port}=`));
      if (cookie) stolen = cookie;
      if (r.url === "/frames")
        return `<!doctype html><body><iframe id="f" src="${base}/requests/${req.request}" width="1000" height="600"></iframe>
<object id="o" data="${base}/requests/${req.request}" type="text/html" width="1000" height="600"></object></body>`;
      if (r.url === "/post") {
        const card = await raw(`${base}/requests/${req.request}`, { headers: { Cookie: stolen } });
        const csrf = /name="csrf" value="([^"]+)"/.exec(card.body)?.[1] ?? "";
        seenAtConsole = [csrf, reviewedIn(card.body)];
        return `<!doctype html><body><form id="f" method="post" action="${base}/requests/${req.request}/decide">
<input name="csrf" value="${csrf}"><input name="reviewed" value="${seenAtConsole[1]}"><input name="proof" value="">
<button name="action" value="approve-session">go</button></form>
<script>document.querySelector("button").click();</script></body>`;
      }
      return `<!doctype html><body><p>my dev app</p><script src="/attack.js"></script></body>`;
    };
    const dev = createServer((r, res) => {
      if (r.url === "/attack.js") {
        res.setHeader("Content-Type", "text/javascript");
        res.end(attackScript(base, req.request));
        return;
      }
      pageOf(r).then(
        (body) => {
          res.setHeader("Content-Type", "text/html");
          res.end(body);
        },
        (e) => {
          res.statusCode = 500;
          res.end(String(e));
        },
      );
    });
    await new Promise<void>((r) => dev.listen(0, "127.0.0.1", r));
    cleanup.push(
      () =>
        new Promise<void>((r) => {
          dev.close(() => r());
          dev.closeAllConnections();
        }),
    );
    const devBase = `http://127.0.0.1:${(dev.address() as AddressInfo).port}`;

    // Reading: the cookie goes along, but no answer reaches the page (no CORS header, ever).
    await page.goto(`${devBase}/`);
    await page.waitForFunction("window.done === true");
    expect(stolen, "the browser sent the console's cookie to the other port").not.toBe("");
    const outcomes = await page.evaluate("window.outcomes");
    expect(outcomes).toEqual({
      fetch: "refused: TypeError",
      fetchRequest: "refused: TypeError",
      // an opaque answer with nothing readable, or none at all (Chromium's opaque-response blocking)
      noCors: expect.stringMatching(/^(opaque 0|refused: TypeError)$/),
      events: "error",
      socket: expect.stringMatching(/^(error|closed)$/),
    });

    // Framing: neither the iframe nor the object shows any of the console (frame-ancestors 'none',
    // X-Frame-Options: DENY), so there is no button under a decoy to click.
    await page.goto(`${devBase}/frames`);
    await page.waitForLoadState("load");
    // (Chromium swaps a refused frame for an error page: each frame is read afresh until all answer.)
    const shownInFrames = async (): Promise<string[] | null> => {
      try {
        const framed = page.frames().filter((f) => f !== page.mainFrame());
        return await Promise.all(
          framed.map((f) => f.evaluate<string>("document.body ? document.body.textContent : ''")),
        );
      } catch {
        return null;
      }
    };
    await expect.poll(async () => (await shownInFrames())?.length ?? 0).toBeGreaterThan(0);
    const shown = (await shownInFrames()) ?? [];
    expect(shown.filter((t) => /Approve|deploy|Log out|Passphrase/.test(t))).toEqual([]);

    // Posting: the form carries the session's real CSRF token and review digest, and the browser
    // adds the session cookie; its Origin is the dev page's, so it is refused before any route.
    const answer = page.waitForResponse((r) => r.url().endsWith(`/requests/${req.request}/decide`));
    await page.goto(`${devBase}/post`);
    expect(seenAtConsole[0], "the dev server read the session's CSRF token").toMatch(/./);
    expect((await answer).status()).toBe(403);
    expect(storedPending(stateDir).map((p) => p.request)).toEqual([req.request]);

    // The human's own page decides it, with one click (the held proof).
    await page.goto(`${base}/requests/${req.request}`);
    await page.waitForSelector("main#live:not([data-settling])");
    await page.getByTestId("approve-call").click();
    await page.waitForSelector("p.outcome");
    expect(storedPending(stateDir)).toEqual([]);
    expect((await call).isError).toBeFalsy();
  });
});
