// A connection to `run --listen` is a descriptor from the moment it is accepted, before Host or the
// token is read. A client that opens connections and sends half a request on each (slowloris), or
// nothing, held one descriptor per connection with no bound: the gateway ran out (EMFILE), and the
// next file it opened (a module loaded late, a server's pipes, the store) threw and ended it. The
// front holds at most half the process's descriptor limit; one more is closed as it is accepted.
// The gateway runs under `prlimit --nofile=200`, so 400 connections are past any cap it could pick.
import { Agent } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { FLOOD, floodTakenIn, holdConnections, UNDER_FILE_LIMIT } from "../helpers/connectionFlood.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { type Listener, startListener } from "./listen.js";
import { initializeBody, messagesOf, raw } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("run --listen under a flood of connections", () => {
  it("a client holding 400 half-written requests under a 200-descriptor limit: the gateway lives, and a connected client's call is served and audited", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const l: Listener = await startListener(fixtureCommand("echo"), {
      stateDir,
      args: ["--approval", "none"],
      prefix: UNDER_FILE_LIMIT,
    });
    cleanup.push(() => l.close());
    // the client's one connection, made (and its process looked up) before the flood
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    cleanup.push(() => agent.destroy());
    const client = (body: string, extra: Record<string, string> = {}) =>
      raw(l, { agent, headers: l.headers(extra), body });
    expect((await raw(l, { agent, method: "GET", headers: l.headers() })).status).toBe(405);

    const flood = await holdConnections(l.port, FLOOD, `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${l.port}\r\n`);
    cleanup.push(() => {
      for (const s of flood) s.destroy();
    });
    // every connection of the flood accepted (taken in or closed past the cap) before the client
    // goes on: on a loaded machine the gateway could otherwise serve the client's whole exchange on
    // its open connection before accepting the flood's 101st, and the cap was never reached
    await floodTakenIn(l.port);
    // the session, its server and its catalog are all made while the flood holds its connections
    const init = await client(initializeBody());
    expect(init.status, init.body).toBe(200);
    const session = init.headers["mcp-session-id"] as string;
    const sid = { "mcp-session-id": session };
    expect(
      (await client(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }), sid)).status,
    ).toBe(202);
    const call = await client(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "echo", arguments: { message: "through the flood" } },
      }),
      sid,
    );
    expect(call.status, call.body).toBe(200);
    expect(JSON.stringify(messagesOf(call.body).find((m) => m.id === 1)?.result)).toContain(
      "through the flood",
    );
    expect(l.proc.exitCode, l.stderr()).toBeNull();
    // the cap is said, once, not once per connection refused
    await waitFor(
      () => /closed a connection as it was accepted/.test(l.stderr()),
      10_000,
      "the cap said on stderr",
    );
    expect(l.stderr().match(/closed a connection as it was accepted/g) ?? [], l.stderr()).toHaveLength(1);
    expect(l.stderr()).not.toMatch(/EMFILE|uncaught/);

    // once the flood lets go, a new client is served
    for (const s of flood) s.destroy();
    const later = await raw(l, { body: initializeBody() });
    expect(later.status, later.body).toBe(200);
    await l.close();
    const called = (await auditEvents(stateDir)).filter((e) => e.type === "tool_called");
    expect(called).toHaveLength(1);
  });
});
