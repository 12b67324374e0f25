// `approve --next` / `deny --next` decide the request a call waits on now before an older one no
// call waits on any more (the client cancelled it: it stays pending for a retry only), and say
// in their first line which request they picked and why; when no call waits on any, they take
// the oldest pending request, as before, and say that instead. A real gateway in front of the
// catalog fixture (per-call approval), a raw client that calls and cancels, the real CLI.
import { afterEach, describe, expect, it } from "vitest";
import { openStoreToRead } from "../../src/store/db.js";
import { catalogFile, DEPLOY_TOOL } from "../console/helpers.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function perCallGateway(): Promise<RawGateway> {
  const tools = catalogFile(tempDir("portcullis-next-waited-"), [DEPLOY_TOOL]);
  const gw = rawGateway({
    args: [
      ...["--label", "shop", "--approval", "per-call"],
      ...["--approval-timeout", "600000", "--request-ttl", "600000", "--", NODE, FIXTURES.catalog],
    ],
    env: { FIXTURE_CATALOG: tools },
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  expect((await gw.request("tools/list")).result).toBeDefined();
  return gw;
}

function call(gw: RawGateway, id: string, note: string): void {
  gw.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "deploy", arguments: { note } } });
}

/** Waits until the request's row says `wait` of its calls (read in this process, writing nothing). */
async function rowSays(stateDir: string, request: string, wait: string): Promise<void> {
  await waitFor(
    () => {
      const db = openStoreToRead(stateDir);
      try {
        const row = db.prepare("SELECT call_wait FROM approval_requests WHERE request = ?").get(request) as {
          call_wait: string | null;
        };
        return row.call_wait === wait || null;
      } finally {
        db.close();
      }
    },
    20_000,
    `the request's row to say ${wait}`,
  );
}

describe("approve --next prefers the request a call waits on now", () => {
  it("passes over an older request whose call was cancelled, saying so; with none waited on, takes the oldest, saying that", async () => {
    const gw = await perCallGateway();
    const seen = new Set<string>();
    call(gw, "first", "one");
    const cancelled = await nextStoredRequest(gw.stateDir, seen);
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "first" } });
    await rowSays(gw.stateDir, cancelled.request, "cancelled");
    call(gw, "second", "two");
    const waited = await nextStoredRequest(gw.stateDir, seen);
    await rowSays(gw.stateDir, waited.request, "waiting");

    const approved = await runCli(["approve", "--next", "--for", "call", "--state-dir", gw.stateDir], {
      env: passphraseEnv(),
      noTerminal: true,
    });
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout.split("\n")[0]).toBe(
      `approve --next: ${waited.request} (deploy on shop), the oldest pending request a call waits on now; 1 older request no call is known to wait on is left pending ('portcullis approvals --state-dir ${gw.stateDir}' lists it).`,
    );
    expect(approved.stdout).toContain(`approved ${waited.request}`);
    // the call that waited proceeds; the cancelled one's request is still pending, for a retry
    expect((await gw.next((m) => m.id === "second", 20_000)).result).toBeDefined();
    const listed = await runCli(["approvals", "--json", "--state-dir", gw.stateDir]);
    expect(
      (JSON.parse(listed.stdout) as { requests: { request: string }[] }).requests.map((r) => r.request),
    ).toEqual([cancelled.request]);

    // no call waits on any pending request: the oldest is taken, as before, and the line says why
    const denied = await runCli(["deny", "--next", "--reason", "stale", "--state-dir", gw.stateDir], {
      env: passphraseEnv(),
      noTerminal: true,
    });
    expect(denied.code, denied.stderr).toBe(0);
    expect(denied.stdout.split("\n")[0]).toBe(
      `deny --next: ${cancelled.request} (deploy on shop), the oldest pending request: no call waits on any of them now.`,
    );
    expect(denied.stdout).toContain(`denied ${cancelled.request}`);
  });
});
