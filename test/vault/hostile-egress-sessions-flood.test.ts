// Under `run --listen` every session has an egress proxy of its own, in the one gateway process.
// Each was capped on its own (a quarter of the descriptor limit, src/transport/httpConnections.ts),
// so the servers of several sessions flooding their proxies at once (connections with half a
// request written on each) held that many descriptors times the number of sessions: the gateway
// ran out, a request over a connection made before the flood could not dial its upstream, and a
// new session ended as it opened (its proxy could not listen: EMFILE). The proxies of one process
// now share one budget (an eighth of the limit, at least 32): one past it is closed as it is
// accepted, whichever proxy it came to. The gateway runs under `prlimit --nofile=200`: four
// proxies flooded with 150 connections each held 200 descriptors before (50 each), past the limit
// whatever else the process holds.
import { writeFileSync } from "node:fs";
import { Agent } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { floodTakenIn, holdConnections, UNDER_FILE_LIMIT } from "../helpers/connectionFlood.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { type Listener, startListener } from "../http/listen.js";
import { messagesOf, openSession, raw } from "../http/raw.js";
import { getThrough, keptOpen } from "./egress-kit.js";
import { httpUpstream } from "./egress-upstreams.js";

/** Sessions whose proxies are flooded, and the connections each flood holds (past a proxy's own quarter, 50). */
const FLOODED = 4;
const EACH = 150;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const PROXY_LINE = /egress proxy on http:\/\/127\.0\.0\.1:(\d+)/g;

/** The ports of every session's egress proxy so far, from the front's stderr, in order. */
function proxyPorts(l: Listener): number[] {
  return [...l.stderr().matchAll(PROXY_LINE)].map((m) => Number(m[1]));
}

/** A new session with its proxy up: its id and its proxy's port. */
async function sessionWithProxy(l: Listener): Promise<{ sid: string; port: number }> {
  const before = proxyPorts(l).length;
  const sid = await openSession(l);
  const port = await waitFor(
    () => proxyPorts(l)[before],
    20_000,
    `the new session's egress proxy (${l.stderr()})`,
  );
  return { sid, port };
}

/** The echo tool called in session `sid`: the text it answered, or why it did not. */
async function echo(l: Listener, sid: string, message: string): Promise<string> {
  const r = await raw(l, {
    headers: l.headers({ "mcp-session-id": sid }),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "echo", arguments: { message } },
    }),
  });
  return `${r.status} ${JSON.stringify(messagesOf(r.body).find((m) => m.id === 1) ?? r.body)}`;
}

/** What a new connection to the proxy at `port` reads for a whole request before it is closed. */
function freshRequest(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const s: Socket = connect(port, "127.0.0.1");
    let got = "";
    const timer = setTimeout(() => s.destroy(), 10_000);
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      if (got.includes("\r\n\r\n")) s.destroy();
    });
    s.on("error", () => {});
    s.on("close", () => {
      clearTimeout(timer);
      resolve(got);
    });
    s.write(request);
  });
}

describe("the egress proxies of several run --listen sessions under a flood of connections", () => {
  it("four sessions' proxies flooded at once under a 200-descriptor limit: a new session starts and is served, a connection made before is forwarded, a new one to a flooded proxy is closed unanswered", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const [command, ...args] = fixtureCommand("echo");
    const dir = tempDir("portcullis-egress-sessions-flood-");
    cleanup.push(() => removeDir(dir));
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({ servers: { api: { command, args, egress: "record" } } }),
    );
    const upstream = await httpUpstream();
    cleanup.push(() => upstream.close());
    const l = await startListener([], {
      configFile: join(dir, "portcullis.json"),
      label: "api",
      stateDir,
      args: ["--listen", "127.0.0.1:0", "--approval", "none"],
      prefix: UNDER_FILE_LIMIT,
    });
    cleanup.push(() => l.close());
    const target = (path: string) => `http://127.0.0.1:${upstream.port}${path}`;

    // a session whose proxy is not flooded, and the sessions whose proxies are
    const calm = await sessionWithProxy(l);
    const flooded: { sid: string; port: number }[] = [];
    for (let i = 0; i < FLOODED; i++) flooded.push(await sessionWithProxy(l));
    // a connection to the calm session's proxy, made before the flood
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    cleanup.push(() => agent.destroy());
    expect((await getThrough(calm.port, target("/before"), agent)).status).toBe(200);

    // every flooded session's server (here, the test) fills its proxy at once
    const floods = await keptOpen(calm.port, target("/warm"), agent, async () => {
      const all = await Promise.all(
        flooded.map((f) =>
          holdConnections(
            f.port,
            EACH,
            `GET ${target("/flood")} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n`,
          ),
        ),
      );
      cleanup.push(() => {
        for (const s of all.flat()) s.destroy();
      });
      for (const f of flooded) await floodTakenIn(f.port);
      return all;
    });

    // a connection made before the flood is forwarded: its upstream is a descriptor opened now
    const during = await getThrough(calm.port, target("/during"), agent).catch((e: Error) => ({
      status: 0,
      body: e.message,
    }));
    expect(during.status, `${during.body}\n${l.stderr()}`).toBe(200);
    expect(upstream.received.map((r) => r.path)).toContain("/during");
    // the front takes a new session: its server, its proxy and its catalog are made now
    const late = await sessionWithProxy(l);
    expect(await echo(l, late.sid, "a new session")).toContain("a new session");
    // and sessions already open are served, the flooded ones too
    expect(await echo(l, calm.sid, "the calm session")).toContain("the calm session");
    expect(await echo(l, flooded[0]!.sid, "a flooded session")).toContain("a flooded session");
    // the store is readable, by the gateway (the calls above were audited) and by `status`
    const status = await runCli(["status"], { stateDir });
    expect(status.code, status.stderr).toBe(0);
    // a new connection to a flooded proxy is closed as it is accepted: no answer, nothing sent on
    const refused = await freshRequest(
      flooded[1]!.port,
      `GET ${target("/refused")} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n\r\n`,
    );
    expect(refused).toBe("");
    expect(upstream.received.map((r) => r.path)).not.toContain("/refused");
    expect(l.proc.exitCode, l.stderr()).toBeNull();
    expect(l.stderr()).not.toMatch(/EMFILE|uncaught/i);
    // the budget is said, thinned: once, not once per connection closed (nor once per proxy)
    expect(
      l.stderr().match(/egress: closed a connection as it was accepted/g) ?? [],
      l.stderr(),
    ).toHaveLength(1);

    // once the floods let go, a new connection to a flooded proxy is forwarded
    for (const s of floods.flat()) s.destroy();
    const after = await waitFor(
      () => getThrough(flooded[1]!.port, target("/after")).catch(() => null),
      10_000,
      `a request after the flood (${l.stderr()})`,
    );
    expect(after.status, after.body).toBe(200);
    expect(l.proc.exitCode, l.stderr()).toBeNull();
  });
});
