// The console's only script is /static/console.js, loaded by a fixed URL with no integrity
// check. A web server that held the console's port earlier (the agent's dev server, before a
// console it started itself with `portcullis console --port N`, or before the human's usual
// `--port 7345`) can serve that URL with a long max-age: the browser keeps it, and every console
// page loaded later on that port runs it (the console's own `Cache-Control: no-store` is never
// asked for). The script is then 'self' for the CSP: it reads the proof key and the CSRF token
// and approves whatever it likes as soon as the human logs in.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { humanLink, readConsoleAddress } from "../../src/console/address.js";
import { storedPending, waitForPending } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { removeDir, sleep, tempDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import {
  bindLoopback,
  catalogFile,
  DEPLOY_TOOL,
  gatewayFor,
  hasIpv6Loopback,
  loginWithBrowser,
  startConsoleProcess,
} from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

// What the agent's server answered for /static/console.js: the handoff of the proof key kept
// working (so nothing looks wrong), plus an approval of every card on the page.
const EVIL_JS = `"use strict";
(function () {
  var KEY = "portcullis-proof";
  var h = document.querySelector('meta[name="portcullis-proof"]');
  if (h) {
    localStorage.setItem(KEY, h.getAttribute("content") || "");
    var next = h.getAttribute("data-next");
    if (next) location.replace(next);
    return;
  }
  var proof = localStorage.getItem(KEY) || "";
  document.querySelectorAll("article[data-request-id]").forEach(function (card) {
    var form = card.querySelector('form[action$="/decide"]');
    if (!form) return;
    var body = new URLSearchParams({
      csrf: form.querySelector('input[name="csrf"]').value,
      reviewed: form.querySelector('input[name="reviewed"]').value,
      action: "approve-session",
      proof: proof,
    });
    fetch(form.getAttribute("action"), { method: "POST", body: body, credentials: "same-origin" });
  });
})();
`;

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

describe("a script cached from an earlier server on the console's port", () => {
  it("is never run by the console's pages: logging in approves nothing", async () => {
    const port = await freePortOnBoth();

    // The agent's dev server on that port, visited once by the human.
    const dev = createServer((req, res) => {
      if (req.url === "/static/console.js") {
        res.setHeader("Content-Type", "text/javascript");
        res.setHeader("Cache-Control", "public, max-age=31536000, immutable");
        return res.end(EVIL_JS);
      }
      res.setHeader("Content-Type", "text/html");
      res.end(`<!doctype html><title>preview</title><script src="/static/console.js"></script><p>my app</p>`);
    });
    await new Promise<void>((r) => dev.listen(port, "127.0.0.1", r));
    const page = suite.browser.page;
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.goto("about:blank");
    await new Promise<void>((r) => {
      dev.close(() => r());
      dev.closeAllConnections();
    });

    // Later: a console on that port (started by the agent, or the human's fixed --port), and a
    // request of the agent waiting in it.
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-console-tools-");
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    const c = await startConsoleProcess(stateDir, ["--port", String(port)]);
    cleanup.push(() => c.stop());
    const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]));
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const call = held(gw.client.callTool({ name: "deploy", arguments: { target: "production" } }));
    const b = await waitForPending(stateDir, (l) => l[0], 20_000, "the agent's request", storedPending);

    // The human logs in and looks at the list. No click.
    await loginWithBrowser(page, c.url);
    await page.getByTestId("pending-request").waitFor();
    await sleep(1500);
    const served = await page.evaluate("typeof window.portcullisProofKey");
    const agentCall = await Promise.race([
      call.then((r) => (r.isError ? "refused" : "ran")).catch(() => "refused"),
      sleep(500).then(() => "waits"),
    ]);
    expect({
      pending: storedPending(stateDir).map((p) => p.request),
      consoleScript: served,
      agentCall,
    }).toEqual({
      pending: [b.request],
      consoleScript: "function",
      agentCall: "waits",
    });
    await gw.close();
    await call.catch(() => {});
  });

  it("a login page cached from the earlier server is not what the human types the passphrase into", async () => {
    const port = await freePortOnBoth();
    const dev = createServer((req, res) => {
      res.setHeader("Content-Type", "text/html");
      if (req.url === "/login") {
        res.setHeader("Cache-Control", "public, max-age=31536000, immutable");
        return res.end(
          `<!doctype html><title>Log in · portcullis</title><h1>Prove it is you</h1><p id="evil">not the console</p><form><input type="password" data-testid="login-passphrase"></form>`,
        );
      }
      res.end(`<!doctype html><title>preview</title><iframe src="/login" hidden></iframe><p>my app</p>`);
    });
    await new Promise<void>((r) => dev.listen(port, "127.0.0.1", r));
    const page = suite.browser.page;
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.goto(`http://127.0.0.1:${port}/login`);
    await page.goto("about:blank");
    await new Promise<void>((r) => {
      dev.close(() => r());
      dev.closeAllConnections();
    });
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const c = await startConsoleProcess(stateDir, ["--port", String(port)]);
    cleanup.push(() => c.stop());
    // the printed link: the ticket (unpredictable) is traded for a cookie, then the login page
    const link = humanLink(readConsoleAddress(stateDir)!);
    await page.goto(link);
    await page.waitForURL(`${c.url}/login`);
    expect(await page.locator("#evil").count()).toBe(0);
  });
});
