// A gateway that asks for a decision starts the console of its state directory; the console it
// started goes away with that state directory; a console that cannot start changes nothing for
// the call.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { describe, expect, it } from "vitest";
import { readConsoleAddress } from "../../src/console/address.js";
import { processStartTime } from "../../src/identity/proc.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { catalogFile, DEPLOY_TOOL, gatewayFor, httpLogin, raw, stopConsoleOf } from "./helpers.js";

describe("the console on demand", () => {
  it("is started by the first request, opening no browser, reused by the next, and stops once its state directory is gone", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-console-tools-");
    // An agent's call opens no browser: the console it starts is told --no-open (the human hears
    // of the request from the gateway's stderr and the desktop notification). An opener first on
    // PATH writes down any run.
    const opened = join(dir, "opened.log");
    for (const name of ["xdg-open", "open"]) {
      writeFileSync(join(dir, name), `#!/bin/sh\necho "$*" >> '${opened}'\n`);
      chmodSync(join(dir, name), 0o755);
    }
    const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]), ["--approval", "per-call"], {
      PATH: `${dir}${delimiter}${process.env.PATH ?? ""}`,
    });
    let pid = 0;
    try {
      expect(readConsoleAddress(stateDir)).toBeNull();
      const seen = new Set<string>();
      const first = gw.client.callTool({ name: "deploy", arguments: {} });
      const r1 = await nextStoredRequest(stateDir, seen);
      const line = await gw.waitForStderr(/review and decide it in the console: (\S+)/, 20_000);
      const address = readConsoleAddress(stateDir)!;
      pid = address.pid;
      // The link for the human carries the console's ticket (src/console/ticket.ts).
      expect(line).toContain(`${address.url}/requests/${r1.request}?ticket=${address.ticket}`);
      // A per-call tool is offered one call, never the session.
      const s = await httpLogin(address.url);
      const card = (await raw(`${address.url}/requests/${r1.request}`, { headers: { Cookie: s.cookie } }))
        .body;
      expect(card).toContain('data-testid="approve-call"');
      expect(card).not.toContain('data-testid="approve-session"');
      expect(card).toContain("per-call (every call asks)");
      await decideByCli(stateDir, "approve", r1.request, "--for", "call");
      expect((await first).isError).toBeFalsy();

      const second = gw.client.callTool({ name: "deploy", arguments: { note: "again" } });
      const r2 = await nextStoredRequest(stateDir, seen);
      const from = gw.stderr().indexOf(r1.request) + 1;
      await gw.waitForStderr(new RegExp(`console: \\S+/requests/${r2.request}`), 20_000, from);
      expect(readConsoleAddress(stateDir)?.pid).toBe(pid);
      await decideByCli(stateDir, "approve", r2.request, "--for", "call");
      expect((await second).isError).toBeFalsy();
      // (the console started with the first request, two decisions ago)
      expect(existsSync(opened)).toBe(false);
    } finally {
      await gw.close();
      removeDir(dir);
      removeDir(stateDir);
    }
    await waitFor(() => processStartTime(pid) === null, 20_000, "the on-demand console to stop");
  });

  it("a console that cannot start is one warning line; the call is decided as ever", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-console-tools-");
    mkdirSync(join(stateDir, "console.log")); // the console's log cannot be opened
    const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]));
    try {
      const call = gw.client.callTool({ name: "deploy", arguments: {} });
      const req = await nextStoredRequest(stateDir);
      await gw.waitForStderr(/warning: the console could not be started/, 20_000);
      await decideByCli(stateDir, "approve", req.request);
      expect((await call).isError).toBeFalsy();
      expect(readConsoleAddress(stateDir)).toBeNull();
    } finally {
      await gw.close();
      await stopConsoleOf(stateDir);
      removeDir(dir);
      removeDir(stateDir);
    }
  });
});
