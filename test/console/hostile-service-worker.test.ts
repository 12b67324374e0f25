// A service worker on the console's origin. Two ways one could get there:
//  - a page on the console's origin registers one of the console's own scripts (console.js,
//    webauthn.js: JavaScript with a JavaScript MIME type, the only thing a browser needs to take
//    a script as a worker's);
//  - a web server that held the console's port earlier (the agent's dev server, before a console
//    started with `--port N`) registered its own worker with scope "/". From then on that worker
//    answers every navigation to the origin itself: the link with the console's ticket never
//    reaches the console (so its Clear-Site-Data never arrives), and the worker can show a
//    login page of its own and take the passphrase.
// The console answers every worker script fetch (a request carrying `Service-Worker`, which the
// browser sends on a registration's fetch and on the update check it makes after each navigation
// the worker handled) with 403 and Clear-Site-Data: a registration fails, and a worker left by an
// earlier server is removed at its first update check, so the next visit reaches the console.
// The visit before it is the worker's, and a server that held the port only for a moment, in a
// hidden frame of a page on another port, is enough to plant one: the last test pins that gap down.
// Real Chromium (Debian's), real console processes.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { humanLink, readConsoleAddress } from "../../src/console/address.js";
import { browserSuite } from "../helpers/browser.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { bindLoopback, hasIpv6Loopback, raw, startConsoleProcess } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

async function freePortOnBoth(): Promise<number> {
  const v6 = await hasIpv6Loopback();
  for (;;) {
    const s = await bindLoopback("127.0.0.1", 0);
    if (typeof s === "string") throw new Error(s);
    const port = (s.address() as AddressInfo).port;
    await new Promise((r) => s.close(r));
    if (!v6) return port;
    const t = await bindLoopback("::1", port);
    if (typeof t === "string") continue;
    await new Promise((r) => t.close(r));
    return port;
  }
}

// A worker that answers every navigation itself, with a page of its own.
const WORKER = `self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (e) { e.waitUntil(self.clients.claim()); });
self.addEventListener("fetch", function (e) {
  if (e.request.mode === "navigate")
    e.respondWith(new Response('<!doctype html><title>Log in</title><p id="worker">not the console</p>',
      { headers: { "Content-Type": "text/html" } }));
});`;

// page scripts as strings: the test's TypeScript has no DOM types
const registrations = (page: import("playwright-core").Page): Promise<number> =>
  page.evaluate("navigator.serviceWorker.getRegistrations().then((l) => l.length)");

describe("a service worker on the console's origin", () => {
  it("cannot be registered from the console's own scripts: every attempt is refused, none is left", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await page.goto(`${c.url}/login`);
    const script = await page.getAttribute("script[src]", "src");
    expect(script).toMatch(/^\/static\/[0-9a-f]+\/console\.js$/);
    const scripts = [script!, script!.replace(/console\.js$/, "webauthn.js")];
    // both are served as JavaScript to a plain fetch: what a registration would take
    for (const s of scripts)
      expect((await raw(`${c.url}${s}`)).headers["content-type"]).toMatch(/javascript/);
    for (const s of scripts) {
      const outcome = await page.evaluate(
        `navigator.serviceWorker.register(${JSON.stringify(s)}).then(
          (r) => "registered " + r.scope,
          (e) => "refused: " + e.message,
        )`,
      );
      expect(outcome, s).toMatch(/^refused: /);
    }
    expect(await registrations(page)).toBe(0);
    // the worker script fetch as the browser sends it: 403, and the origin's storage cleared
    const direct = await raw(`${c.url}${scripts[1]}`, { headers: { "Service-Worker": "script" } });
    expect(direct.status).toBe(403);
    expect(direct.headers["clear-site-data"]).toMatch(/"storage"/);
    // the console's own page still works (the refusal is for worker fetches only)
    expect((await raw(`${c.url}${scripts[1]}`)).status).toBe(200);
  });

  it("left by an earlier server on the console's port, is removed at its first update check: the next visit reaches the console", async () => {
    const port = await freePortOnBoth();
    const dev = createServer((req, res) => {
      if (req.url === "/sw.js") {
        res.setHeader("Content-Type", "text/javascript");
        return res.end(WORKER);
      }
      res.setHeader("Content-Type", "text/html");
      res.end("<!doctype html><title>preview</title><p>my app</p>");
    });
    await new Promise<void>((r) => dev.listen(port, "127.0.0.1", r));
    const page = suite.browser.page;
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.evaluate(
      'navigator.serviceWorker.register("/sw.js", { scope: "/" }).then(() => navigator.serviceWorker.ready)',
    );
    await page.goto(`http://127.0.0.1:${port}/elsewhere`);
    // the worker answers the origin's navigations now
    await page.locator("#worker").waitFor();
    await new Promise<void>((r) => {
      dev.close(() => r());
      dev.closeAllConnections();
    });

    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const c = await startConsoleProcess(stateDir, ["--port", String(port)]);
    cleanup.push(() => c.stop());
    const link = humanLink(readConsoleAddress(stateDir)!);
    // This first visit is the worker's (it answers before any request leaves the browser); the
    // update check the browser makes after it reaches the console.
    await page.goto(link);
    await waitFor(async () => (await registrations(page)) === 0, 15_000, "the worker to be removed");
    await page.goto(link);
    await page.getByTestId("login-passphrase").waitFor();
    expect(await page.locator("#worker").count()).toBe(0);
  });

  // Not covered (docs/security.md, "No service worker on the console's origin"): this pins down
  // what the first visit is, so that the day it fails the gap has closed and the docs must say so.
  it("not covered: planted on the console's port by a hidden frame of another port, it answers the first visit, and its page stays after the worker is gone", async () => {
    const port = await freePortOnBoth();
    // The agent's dev server holds the port for a moment (it can hold many) and serves a page that
    // registers its worker; the human opens only the agent's preview, on another port, which
    // holds that page in a frame: the same site (every port of 127.0.0.1), so the frame's worker
    // is the origin's own, not a partitioned one.
    const planter = createServer((req, res) => {
      if (req.url === "/sw.js") {
        res.setHeader("Content-Type", "text/javascript");
        return res.end(WORKER);
      }
      res.setHeader("Content-Type", "text/html");
      res.end(
        "<!doctype html><script>navigator.serviceWorker.register('/sw.js', { scope: '/' }).then(() => navigator.serviceWorker.ready).then(() => parent.postMessage('planted', '*'));</script>",
      );
    });
    await new Promise<void>((r) => planter.listen(port, "127.0.0.1", r));
    const preview = createServer((_req, res) => {
      res.setHeader("Content-Type", "text/html");
      res.end(
        `<!doctype html><title>preview</title><p>my app</p><iframe hidden src="http://127.0.0.1:${port}/"></iframe><script>addEventListener("message", (e) => { if (e.data === "planted") document.title = "planted"; });</script>`,
      );
    });
    await new Promise<void>((r) => preview.listen(0, "127.0.0.1", r));
    cleanup.push(
      () =>
        new Promise<void>((r) => {
          preview.close(() => r());
          preview.closeAllConnections();
        }),
    );
    const page = suite.browser.page;
    await page.goto(`http://127.0.0.1:${(preview.address() as AddressInfo).port}/`);
    await page.waitForFunction("document.title === 'planted'", undefined, { timeout: 10_000 });
    await new Promise<void>((r) => {
      planter.close(() => r());
      planter.closeAllConnections();
    });

    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const c = await startConsoleProcess(stateDir, ["--port", String(port)]);
    cleanup.push(() => c.stop());
    // The human's first visit to the console's link is the worker's page: a login of its own
    // could stand here. The console's refusal of the update check removes the worker, but nothing
    // the console sends reaches this tab: the worker's page stays until the human navigates.
    await page.goto(humanLink(readConsoleAddress(stateDir)!));
    expect(await page.locator("#worker").count()).toBe(1);
    await waitFor(async () => (await registrations(page)) === 0, 15_000, "the worker to be removed");
    expect(await page.locator("#worker").count()).toBe(1);
    await page.reload();
    await page.getByTestId("login-passphrase").waitFor();
  });
});
