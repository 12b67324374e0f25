// A connection to a gateway's egress proxy is a descriptor from the moment it is accepted, before
// a byte of it is read. The gateway's own server (or any process of the user's) that opens
// connections and sends half a request on each (slowloris) held one descriptor per connection
// with no bound, in the gateway's process: it ran out, and whatever it opened next (the upstream
// a request through the proxy dials) failed with EMFILE. The egress proxies of a process hold at
// most an eighth of its descriptor limit together (each connection may dial an upstream too:
// src/transport/httpConnections.ts); one more is closed as it is accepted. The gateway runs under
// `prlimit --nofile=200`, so 400 connections are past any cap it could pick; the well-behaved
// client's connection was made before the flood.
import { writeFileSync } from "node:fs";
import { Agent } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FLOOD, floodTakenIn, holdConnections, UNDER_FILE_LIMIT } from "../helpers/connectionFlood.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { getThrough, keptOpen, proxyPort, text } from "./egress-kit.js";
import { httpUpstream } from "./egress-upstreams.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a gateway's egress proxy under a flood of connections", () => {
  it("400 half-written requests under a 200-descriptor limit: the gateway lives, a connected client's request is forwarded, and a new one once the flood lets go", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const [echo, ...echoArgs] = fixtureCommand("echo");
    const dir = tempDir("portcullis-egress-flood-");
    cleanup.push(() => removeDir(dir));
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({ servers: { api: { command: echo, args: echoArgs, egress: "record" } } }),
    );
    const upstream = await httpUpstream();
    cleanup.push(() => upstream.close());
    const gw = await startGateway({
      args: ["--approval", "none", "api"],
      cwd: dir,
      stateDir,
      prefix: UNDER_FILE_LIMIT,
    });
    cleanup.push(() => gw.close());
    let ended = false;
    void gw.exited.then(() => {
      ended = true;
    });
    const port = await proxyPort(gw);
    const target = (path: string) => `http://127.0.0.1:${upstream.port}${path}`;
    // the client's one connection to the proxy, made before the flood
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    cleanup.push(() => agent.destroy());
    expect((await getThrough(port, target("/before"), agent)).status).toBe(200);

    const flood = await keptOpen(port, target("/warm"), agent, async () => {
      const sockets = await holdConnections(
        port,
        FLOOD,
        `GET ${target("/flood")} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n`,
      );
      cleanup.push(() => {
        for (const s of sockets) s.destroy();
      });
      // the proxy takes each connection in after reading the kernel's socket table (whose process
      // it is), one at a time: the flood has filled what it could once none is left queued
      await floodTakenIn(port);
      return sockets;
    });
    // forwarding dials the upstream: a descriptor opened while the flood holds its connections
    const during = await getThrough(port, target("/during"), agent).catch((e: Error) => ({
      status: 0,
      body: e.message,
    }));
    expect(during.status, `${during.body}\n${gw.stderr()}`).toBe(200);
    expect(upstream.received.map((r) => r.path)).toContain("/during");
    // and the gateway's own work goes on: a call, audited in the store
    const call = await gw.client.callTool({ name: "echo", arguments: { message: "through the flood" } });
    expect(text(call), gw.stderr()).toContain("through the flood");
    expect(ended, gw.stderr()).toBe(false);

    // once the flood lets go, a new connection is forwarded (one that came before the proxy saw
    // the flood's connections close was closed as the flood's were: asked again)
    for (const s of flood) s.destroy();
    const later = await waitFor(
      () => getThrough(port, target("/after")).catch(() => null),
      10_000,
      `a request after the flood (${gw.stderr()})`,
    );
    expect(later.status, later.body).toBe(200);
    expect(ended, gw.stderr()).toBe(false);
    expect(gw.stderr()).not.toMatch(/EMFILE|uncaught/i);
    // the cap is said, once, not once per connection closed
    expect(
      gw.stderr().match(/egress: closed a connection as it was accepted/g) ?? [],
      gw.stderr(),
    ).toHaveLength(1);
  });
});
