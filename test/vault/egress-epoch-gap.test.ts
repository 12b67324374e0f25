// The time between two execution epochs, end to end: a server rebuilt while the gateway runs
// (onChange restart). What its proxy sees while no epoch is live belongs to the epoch that comes
// up next, never to the one before it: a review of the new code must see every host the new code
// contacted. Two kinds of request meet the rebuild here: the new code's startup request (sent
// before its first tools/list answer) and the old process's last ones, sent after its epoch ended
// while it is being stopped (a call it goes on with). `portcullis egress --json` and the audit's
// `egress` events file both under the NEW epoch, and the old epoch's destinations never name the
// new code's host.
//
// Where the proxy can see the new code before its epoch is recorded: a launch spawns the server
// while its identity is captured, but that capture mostly runs on the gateway's own thread (files
// are hashed there; worker threads join in only with 1,500 files or more to hash, or a cold tree),
// and the epoch is minted and announced as soon as it resolves: the proxy, on the same event loop,
// seldom reads the new code's first request before that. The old process's last requests meet the gap every time (its stop
// waits up to the shutdown grace), which is what makes this test fail when a request of no epoch
// is filed under the epoch before it.
import { writeFileSync } from "node:fs";
import * as http from "node:http";
import type { Socket } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { egressKit, nodeServer, text } from "./egress-kit.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

interface EgressJson {
  epochs: { serverLabel: string; epoch: string | null; destinations: { host: string; port: number }[] }[];
}

async function egressJson(stateDir: string): Promise<EgressJson> {
  const r = await runCli(["egress", "api", "--json"], { stateDir });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as EgressJson;
}

/** The epochs under which 127.0.0.1:`port` was recorded (null: under none). */
function epochsOf(e: EgressJson, port: number): (string | null)[] {
  return e.epochs
    .filter((x) => x.destinations.some((d) => d.host === "127.0.0.1" && d.port === port))
    .map((x) => x.epoch);
}

/** An upstream on loopback that answers every request at once; `got` holds the paths asked. */
async function upstream() {
  const got: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    got.push(new URL(req.url ?? "/", "http://x").pathname);
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("upstream ok");
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as { port: number }).port;
  const up = {
    url: `http://127.0.0.1:${port}`,
    port,
    got,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
  k.cleanup.push(() => up.close());
  return up;
}

const NEW_EPOCH = /new execution epoch: .* epoch=(\S+) \(was (\S+); restart\)/;

describe("requests made between two epochs", () => {
  it("a rebuild: the new code's startup request, and the old process's last requests, are filed under the new epoch", async () => {
    const { other, hosts } = await k.upstreams();
    // the old code's loop, which goes on after its epoch ended until its process is stopped: a
    // declared host, so that each request is read and recorded (not one tunnel for them all)
    const loop = await upstream();
    // the new code's startup host
    const early = await upstream();
    const declared = [...hosts, `127.0.0.1:${loop.port}`];
    const stateDir = newStateDir();
    const startupUrl = join(tempDir("portcullis-startup-"), "url");
    const dir = k.project(nodeServer, declared, {
      env: { EGRESS_STARTUP_URL_FILE: startupUrl },
      identity: { include: ["plugin.txt"] },
      onChange: "restart",
      approval: { default: "none" },
    });
    writeFileSync(join(dir, "plugin.txt"), "v1\n");
    await k.storeHttpSecret(stateDir, ...declared);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);

    // the first code contacts `other` in a call: its epoch has a destination of its own
    expect(text(await gw.client.callTool({ name: "fetch_url", arguments: { url: `${other.url}/v1` } }))).toBe(
      "200 upstream ok /v1",
    );
    const first = await waitFor(
      async () => epochsOf(await egressJson(stateDir), other.port)[0] ?? null,
      10_000,
      "the first epoch's destination",
    );
    // a call the first code goes on with after its epoch ends: the process does not exit when its
    // input closes, and runs until the restart's grace is over
    const looping = gw.client.callTool({ name: "fetch_loop", arguments: { url: `${loop.url}/loop` } });
    looping.catch(() => {});
    await waitFor(() => loop.got.length >= 2, 10_000, "the old code's loop");

    // the rebuild: the new code contacts `early` as it starts (before its first tools/list answer)
    writeFileSync(startupUrl, `${early.url}/startup`);
    const mark = gw.stderr().length;
    writeFileSync(join(dir, "plugin.txt"), "v2\n");
    const [, second, was] = NEW_EPOCH.exec(await gw.waitForStderr(NEW_EPOCH, 30_000, mark))!;
    expect(was).toBe(first);
    await waitFor(() => early.got.includes("/startup"), 10_000, "the new code's startup request");
    await gw.client.listTools();
    // the gateway ends: the record is written (what is still held, under no epoch)
    await gw.close();

    const listed = await egressJson(stateDir);
    const destinations = (epoch: string | undefined) =>
      (listed.epochs.find((x) => x.epoch === epoch)?.destinations ?? []).map((d) => d.port);
    expect(epochsOf(listed, other.port)).toEqual([first]);
    // the startup request: under the new epoch, and the old epoch's destinations do not name it
    expect(epochsOf(listed, early.port)).toEqual([second]);
    expect(destinations(first)).not.toContain(early.port);
    // the old process's loop: under its epoch while it lived, then under its successor (which can
    // only add to what a review of the new code shows), never under none
    expect(epochsOf(listed, loop.port)).toEqual([first, second]);
    const egress = (await auditEvents(stateDir)).filter((e) => e.type === "egress");
    const audited = (port: number) => [...new Set(egress.filter((e) => e.port === port).map((e) => e.epoch))];
    expect(audited(early.port)).toEqual([second]);
    expect(audited(loop.port)).toEqual([first, second]);
  });
});
