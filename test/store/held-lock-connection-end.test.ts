// A call that needs a human, while another program keeps the store locked past the busy
// timeout: its approval request could not be written with its record, and is stored with a
// bounded retry (PORTCULLIS_BUSY_PATIENCE_MS). If the client's connection ends meanwhile, nobody
// will wait for that request any more: the retry stops, the call is answered that the
// connection ends (-32050), and the gateway ends without waiting out the patience; no request
// is left pending for an ended run. Before, the retry went on for its whole patience.
// Real gateway, real server, a real second process holding the lock.
import { afterEach, describe, expect, it } from "vitest";
import { openExistingStore } from "../../src/store/db.js";
import { holdStoreLock } from "../helpers/lock.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a connection that ends while its call's approval request waits for the store", () => {
  it("stops the request's retry: the call is told the connection ends, the gateway ends, nothing is left pending", async () => {
    const stateDir = newStateDir();
    const gw = rawGateway({
      args: ["--label", "echo", "--approval", "session", "--", ...fixtureCommand("echo")],
      stateDir,
      env: {
        // the record's group is given up after 1.5 s; the request's own retry would go on for 10 min
        PORTCULLIS_BUSY_TIMEOUT_MS: "1500",
        PORTCULLIS_BUSY_PATIENCE_MS: "600000",
        PORTCULLIS_NO_CONSOLE: "1",
      },
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    await gw.request("tools/list");
    const lock = await holdStoreLock(stateDir);
    let held = true;
    cleanup.push(() => (held ? lock.release() : undefined));
    gw.send({
      jsonrpc: "2.0",
      id: "held",
      method: "tools/call",
      params: { name: "echo", arguments: { message: "x" } },
    });
    // the record was given up, and the request's own retry began (said once)
    await waitForStderr(gw, /the approval request for "echo" waits for it/);
    gw.closeStdin();
    // answered, and ended, with the lock still held
    const answer = await gw.next((m) => m.id === "held", 30_000);
    expect(answer.error).toMatchObject({
      code: -32050,
      data: { reason: "the connection ends: its approval request closes with the agent run" },
    });
    const exit = await gw.exited;
    expect(exit.code).toBe(0);
    await lock.release();
    held = false;
    const db = openExistingStore(stateDir);
    try {
      expect(db.prepare("SELECT count(*) FROM approval_requests WHERE state = 'pending'").pluck().get()).toBe(
        0,
      );
    } finally {
      db.close();
    }
  }, 90_000);
});

async function waitForStderr(gw: { stderr(): string }, pattern: RegExp): Promise<void> {
  for (let i = 0; i < 400 && !pattern.test(gw.stderr()); i++) await new Promise((r) => setTimeout(r, 50));
  expect(gw.stderr()).toMatch(pattern);
}
