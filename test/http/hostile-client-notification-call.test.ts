// Over `run --listen`, a POST whose body is a guarded method written as a notification (no "id")
// is answered 202, and was relayed to the session's server as it was: a tools/call that asks for
// no answer ran on a server that runs notifications' methods (JSON-RPC 2.0 has it do so; the
// lenient fixture does), with no approval and no audit record. The same hole as on stdio
// (test/gateway/hostile-client-notification-call.test.ts), closed in one place for both.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a tools/call POSTed as a notification", () => {
  it("never reaches the session's server without an approval", async () => {
    const dir = tempDir("pc-hostile-http-notif-");
    cleanup.push(() => removeDir(dir));
    const methodLog = join(dir, "methods.jsonl");
    const received = () =>
      existsSync(methodLog) ? readJsonLines<{ method: string; params: unknown }>(methodLog) : [];
    // default approval (session): a call needs a human
    const l = await startListener([NODE, FIXTURES.lenient], { env: { FIXTURE_METHOD_LOG: methodLog } });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const h = l.headers({ "mcp-session-id": session });

    const notification = await raw(l, {
      headers: h,
      body: JSON.stringify({
        jsonrpc: "2.0",
        method: "tools/call",
        params: { name: "echo", arguments: { message: "unapproved-over-http" } },
      }),
    });
    const ping = await raw(l, {
      headers: h,
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" }),
    });
    expect(messagesOf(ping.body)[0]).toMatchObject({ id: 7, result: {} });
    await waitFor(() => received().some((m) => m.method === "ping"), 10_000, "the ping at the server");

    const calls = received().filter((m) => m.method === "tools/call");
    expect(calls, `${notification.status} ${JSON.stringify(calls)}`).toEqual([]);
  });
});
