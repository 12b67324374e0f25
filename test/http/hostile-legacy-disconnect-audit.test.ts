// A legacy-era (2025-06-18) client whose connection drops while its call is at the server: the
// standard says a server SHOULD NOT take that for a cancellation, so the front lets the call run
// on (src/transport/httpSession.ts, `request`: only a modern-era exchange is cancelled on close).
// The answer then comes for a POST nobody reads. Attacked here: five calls dropped mid-way, each
// before a byte of its answer was sent. Each must still be audited once, called and answered
// (never as cancelled, never twice), and the gateway must serve on.
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { removeDir } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { type Listener, startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const CALLS = 5;

/**
 * Writes one POST on its own socket and closes the socket once the gateway has taken the call
 * (its durable `tool_called` is in the store, committed before the call goes to the server), no
 * byte of the answer read.
 */
async function postAndDrop(l: Listener, stateDir: string, session: string, body: string, called: number) {
  const s = connect(l.port, "127.0.0.1");
  s.on("error", () => {});
  const head = Object.entries(l.headers({ "mcp-session-id": session }))
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  s.write(
    `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${l.port}\r\n${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await waitForAuditEvents(
    stateDir,
    (events) => events.filter((e) => e.type === "tool_called").length >= called,
    `tool_called #${called}`,
  );
  s.destroy();
}

describe("a legacy-era client that drops its connection mid-call", () => {
  it("each call runs on at the server and is audited once, answered, not cancelled; the gateway serves on", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const l = await startListener(fixtureCommand("habits"), { stateDir, args: ["--approval", "none"] });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    await raw(l, {
      headers: l.headers({ "mcp-session-id": session }),
      body: JSON.stringify({ jsonrpc: "2.0", id: "list", method: "tools/list" }),
    });
    for (let i = 0; i < CALLS; i++)
      await postAndDrop(
        l,
        stateDir,
        session,
        JSON.stringify({
          jsonrpc: "2.0",
          id: `dropped-${i}`,
          method: "tools/call",
          params: { name: "slow", arguments: { ms: 1500, tag: `t${i}` } },
        }),
        i + 1,
      );
    // the session and the gateway serve on
    const after = await raw(l, {
      headers: l.headers({ "mcp-session-id": session }),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "after",
        method: "tools/call",
        params: { name: "slow", arguments: { ms: 10, tag: "after" } },
      }),
    });
    expect(after.status, after.body).toBe(200);
    expect(JSON.stringify(messagesOf(after.body)[0]?.result)).toContain("slow after");
    // every dropped call's answer comes back to the gateway, and is recorded
    await waitForAuditEvents(
      stateDir,
      (events) => events.filter((e) => e.type === "tool_result").length >= CALLS + 1,
      "every call's tool_result",
    );
    expect(l.proc.exitCode, l.stderr()).toBeNull();
    await l.close();

    const events = await auditEvents(stateDir);
    const called = events.filter((e) => e.type === "tool_called");
    const results = events.filter((e) => e.type === "tool_result");
    expect(called, JSON.stringify(events.map((e) => e.type))).toHaveLength(CALLS + 1);
    expect(results, JSON.stringify(results)).toHaveLength(CALLS + 1);
    // answered by the server, not ended by the gateway: no result says the call was cancelled
    expect(JSON.stringify(results)).not.toMatch(/cancel/i);
    expect(l.stderr()).not.toMatch(/TypeError|Unhandled|uncaught|write after end/i);
  });
});
