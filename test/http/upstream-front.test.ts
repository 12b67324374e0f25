// `run --url` to server-everything (Streamable HTTP) behind an HTTP front (a reverse proxy that
// answers 502 while the server is down), restarted behind it: the gateway must notice the new
// server as a new session and a new epoch. server-everything answers a session id it does not
// know with 400 "Bad Request: No valid session ID provided" (not the standard's 404), and the
// front shows a restarting server as a 502, not as a refused connection.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { auditActivity, auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { gatewayRow } from "../helpers/status.js";
import { type EverythingHttp, everythingOverHttp } from "./everythingHttp.js";
import { type FrontOptions, type FrontProxy, startFront } from "./frontProxy.js";
import { startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Row {
  state: string;
  epoch: string;
  record: { remote: { serverInfo: unknown } };
}

/**
 * The gateway's row as `portcullis status --json` prints it, read in the test process
 * (listGateways, as status reads it) once `until` holds: these cases are about epochs, not about
 * the status command, and the CLI was asked every 25 ms while a case waited for a new epoch, a
 * process of about 0.2 s of CPU each. The case about what status says keeps its CLI process.
 */
async function status(stateDir: string, until: (r: Row) => boolean = (r) => r.epoch !== null): Promise<Row> {
  return (await gatewayRow(stateDir, (r) => until(r as unknown as Row))) as unknown as Row;
}

/**
 * Waits until the gateway serves a ready epoch other than `not` (its catalog fetched). The row
 * never runs ahead of the gateway: it names an epoch once the gateway has switched to it, and says
 * `ready` once the gateway has served its catalog (trackEpochs, src/cli/agentRun.ts), so a call
 * made next is decided under that epoch or a later one.
 */
async function nextEpoch(stateDir: string, not: string): Promise<Row> {
  return (await gatewayRow(
    stateDir,
    (r) => {
      const s = r as unknown as Row;
      return s.state === "ready" && s.epoch !== not && s.record?.remote.serverInfo != null;
    },
    `an epoch after ${not}`,
    20_000,
  )) as unknown as Row;
}

function refusal(e: unknown) {
  return e as { code: number; message: string; data: Record<string, unknown> };
}

interface Setup {
  box: { server: EverythingHttp };
  front: FrontProxy;
  gw: Session<Client>;
  stateDir: string;
  /** the epoch whose session grant covers echo (its approval request's) */
  epochA: string;
}

/**
 * The server restarted behind a front that then answers 502 to everything (the stream first): the
 * stream finds the session gone, and the new session's initialize is refused by the front.
 */
async function restartBehindRefusingFront(s: Setup): Promise<void> {
  await waitFor(() => s.front.count("GET", 200) >= 1, 10_000, "the server-to-client stream to open");
  s.front.set({ getStatus: 502 });
  s.front.endStreams();
  await waitFor(() => s.front.count("GET", 502) >= 1, 10_000, "the front to refuse the stream");
  s.box.server = await s.box.server.restart();
  s.front.set({ postStatus: 502 });
}

/**
 * server-everything behind the front, the gateway to the front, echo approved for the session.
 * The gateway tries the server again after 50 ms, doubled at each try (200 ms by default,
 * PORTCULLIS_RESPAWN_BACKOFF_MS): the tests wait for several refused initializes, then for the
 * try after the front lets them through, and what they prove does not depend on the pace.
 */
async function approvedBehindFront(o: FrontOptions = {}): Promise<Setup> {
  const box = { server: await everythingOverHttp() };
  cleanup.push(() => box.server.kill());
  const front = await startFront(box.server.port, o);
  cleanup.push(() => front.close());
  const stateDir = newStateDir();
  const gw = await startGateway({
    args: ["--url", front.url, "--label", "everything", "--approval-timeout", "30000"],
    env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "50" },
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const first = gw.client.callTool({ name: "echo", arguments: { message: "a" } });
  const req = await nextStoredRequest(stateDir);
  await decideByCli(stateDir, "approve", req.request, "--for", "session");
  await first;
  // the grant's own epoch, as its request names it: what a call is stale against. The row's
  // epoch read now would be the same, unless its write waited out another process's lock on the
  // store (best effort, written again at the next change or heartbeat) and an epoch came between
  return { box, front, gw, stateDir, epochA: req.executionEpoch };
}

async function expectStale(gw: Session<Client>, approvedEpoch: string, currentEpoch: string): Promise<void> {
  const stale = refusal(
    await gw.client.callTool({ name: "echo", arguments: { message: "b" } }).catch((e) => e),
  );
  expect(stale.data).toMatchObject({ error: "authorization_stale", approvedEpoch, currentEpoch });
}

describe("run --url: a server restarted behind an HTTP front", () => {
  it("the server-to-client stream, refused 502 by the front while the server restarts, is looked for again: the restart is a new epoch", async () => {
    const s = await approvedBehindFront();
    await waitFor(() => s.front.count("GET", 200) >= 1, 10_000, "the server-to-client stream to open");
    // the front ends the stream, and refuses it while the server restarts behind it
    s.front.set({ getStatus: 502 });
    s.front.endStreams();
    await waitFor(() => s.front.count("GET", 502) >= 1, 10_000, "the front to refuse the stream");
    s.box.server = await s.box.server.restart();
    s.front.set({});
    // no call is made: only the stream, looked for again, can find the session gone
    const b = await nextEpoch(s.stateDir, s.epochA);
    await expectStale(s.gw, s.epochA, b.epoch);
  });

  it("a call sent on the lost session, answered 400 'No valid session ID', ends the epoch; the next call is stale", async () => {
    // the front offers no server-to-client stream: a lost session is learned from the call itself
    const s = await approvedBehindFront({ getStatus: 405 });
    s.box.server = await s.box.server.restart();
    const lost = refusal(
      await s.gw.client.callTool({ name: "echo", arguments: { message: "lost" } }).catch((e) => e),
    );
    expect(lost.data).toMatchObject({ error: "epoch_transition", requestEpoch: s.epochA, retried: false });
    // the server said it did not know the session: the call was not run, and the agent is told so
    expect(lost.message).toMatch(/did not run the call/);
    expect(lost.data.reason).toBe("the upstream session ended (HTTP 400); the call was not run");
    const b = await nextEpoch(s.stateDir, s.epochA);
    await expectStale(s.gw, s.epochA, b.epoch);
  });
});

describe("run --url: a server that cannot be reached is said to be so at once", () => {
  it("killed (connections refused): tools/list and tools/call get server_unavailable naming the URL and the error; back, a new epoch serves", async () => {
    const box = { server: await everythingOverHttp() };
    cleanup.push(() => box.server.kill());
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: ["--url", box.server.url, "--label", "everything", "--approval", "none"],
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const a = await status(stateDir);
    await box.server.kill();
    await gw.waitForStderr(/cannot be reached \(.*ECONNREFUSED.*\); trying again/, 10_000);

    const url = box.server.url.replace(/[./]/g, "\\$&");
    // status says the server cannot be reached, and why, once: not a new epoch waiting for its catalog
    // (waited for in the test process, then asked of the command once: status is the subject)
    await status(stateDir, (r) => r.state === "unreachable");
    const shown = await runCli(["status", "--json", "--state-dir", stateDir]);
    const down = (JSON.parse(shown.stdout).gateways as (Row & { status: { line: string }[] })[])[0]!;
    expect(down.state).toBe("unreachable");
    const said = down.status.filter((l) => l.line.startsWith("unreachable: "));
    expect(said).toHaveLength(1);
    expect(said[0]!.line).toMatch(new RegExp(`^unreachable: cannot reach ${url}: .*ECONNREFUSED`));
    for (const ask of [
      () => gw.client.listTools(),
      () => gw.client.callTool({ name: "echo", arguments: { message: "down" } }),
    ]) {
      const e = refusal(await ask().catch((x) => x));
      expect(e.data).toMatchObject({ error: "server_unavailable" });
      expect(String(e.data.reason)).toMatch(new RegExp(`^cannot reach ${url}: .*ECONNREFUSED`));
      expect(e.message).toMatch(/remote server cannot be reached/);
    }

    box.server = await box.server.restart();
    await nextEpoch(stateDir, a.epoch);
    await gw.client.listTools();
    const r = (await gw.client.callTool({ name: "echo", arguments: { message: "up" } })) as {
      content: { text: string }[];
    };
    expect(r.content[0]!.text).toContain("up");
  });

  it("behind a front that answers the new session's initialize 502: the gateway stays, says so, and serves the server once it is back", async () => {
    const s = await approvedBehindFront();
    await restartBehindRefusingFront(s);
    await waitFor(() => s.front.count("POST", 502) >= 1, 20_000, "the front to refuse initialize");
    await s.gw.waitForStderr(/answered initialize with HTTP 502/, 10_000);

    const e = refusal(await s.gw.client.listTools().catch((x) => x));
    expect(e.data).toMatchObject({ error: "server_unavailable" });
    expect(String(e.data.reason)).toContain(`${s.front.url} answered initialize with HTTP 502`);

    s.front.set({});
    const b = await nextEpoch(s.stateDir, s.epochA);
    await s.gw.client.listTools();
    await expectStale(s.gw, s.epochA, b.epoch);
  });
});

describe("run --url: a front that answers initialize 5xx while the server is down", () => {
  it("mints no epoch per attempt: one new epoch, recorded and identified before any call under it", async () => {
    const s = await approvedBehindFront();
    // the front refuses the new session's initialize again and again (the server behind it is "down")
    await restartBehindRefusingFront(s);
    await waitFor(() => s.front.count("POST", 502) >= 4, 30_000, "four refused initializes");
    for (const ask of [
      () => s.gw.client.listTools(),
      () => s.gw.client.callTool({ name: "echo", arguments: { message: "while down" } }),
    ])
      expect(refusal(await ask().catch((x) => x)).data).toMatchObject({ error: "server_unavailable" });

    s.front.set({});
    const b = await nextEpoch(s.stateDir, s.epochA);
    await expectStale(s.gw, s.epochA, b.epoch);
    // a call approved under the new epoch runs
    const call = s.gw.client.callTool({ name: "echo", arguments: { message: "c" } });
    await decideByCli(s.stateDir, "approve", (await nextStoredRequest(s.stateDir)).request);
    await call;

    // one epoch more than before, however many initializes the front refused: in the audit...
    const events = await auditEvents(s.stateDir);
    const started = events.filter((x) => x.type === "server_started").map((x) => x.epoch);
    expect(started).toEqual([s.epochA, b.epoch]);
    // ...and in the store
    const db = openStore(s.stateDir);
    try {
      const rows = db.prepare("SELECT epoch FROM epochs ORDER BY started_at").all() as { epoch: string }[];
      expect(rows.map((r) => r.epoch)).toEqual([s.epochA, b.epoch]);
    } finally {
      db.close();
    }
    // the new epoch's record was written and completed before any call under it ran
    const ofB = events.filter((x) => x.epoch === b.epoch).map((x) => x.type);
    expect(ofB[0]).toBe("server_started");
    expect(ofB.indexOf("tool_called")).toBeGreaterThan(ofB.indexOf("server_identified"));
    expect(ofB.indexOf("server_identified")).toBeGreaterThan(0);
  });
});

describe("run --url: what an HTTP answer says of a call that was not run", () => {
  it("a 404 for the session (the SDK's transport, restarted behind a front that offers no stream): the call was not run, and the refusal says so", async () => {
    const box = { server: await startFixture({}, null) };
    cleanup.push(() => box.server.kill());
    const front = await startFront(box.server.port, { getStatus: 405 });
    cleanup.push(() => front.close());
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: ["--url", front.url, "--label", "remote", "--approval", "none"],
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    box.server = await box.server.restart();
    const lost = refusal(
      await gw.client.callTool({ name: "echo", arguments: { message: "x" } }).catch((e) => e),
    );
    expect(lost.code).toBe(-32054);
    expect(lost.data).toMatchObject({ error: "epoch_transition", retried: false });
    expect(lost.message).toMatch(/did not run the call/);
    expect(lost.message).not.toMatch(/went away/);
    expect(lost.data.reason).toBe("the upstream session ended (HTTP 404); the call was not run");
    // and the audit says so too: not run, where a process that went away leaves it unknown (the
    // call's end is committed after its answer is written: waited for, not read once)
    const ended = await waitFor(
      async () => {
        const found = (await auditEvents(stateDir)).filter((e) => e.type === "call_interrupted");
        return found.length > 0 ? found : null;
      },
      10_000,
      "the call's end in the audit log",
    );
    expect(ended).toMatchObject([{ tool: "echo", reason: "epoch_transition", outcome: "not_run" }]);
    const echo = (await auditActivity(stateDir)).filter((a) => a.tool === "echo");
    expect(echo.map((a) => a.outcome)).toEqual(["not-run"]);
  });

  it("a redirect is not followed: the refusal says where it points, without its query, and that the configured URL needs updating", async () => {
    const upstream = await everythingOverHttp();
    cleanup.push(() => upstream.kill());
    const front = await startFront(upstream.port);
    cleanup.push(() => front.close());
    const gw = await startGateway({
      args: ["--url", front.url, "--label", "everything", "--approval", "none"],
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    front.set({ postRedirect: "/moved/mcp?token=secret-in-query" });
    const e = refusal(
      await gw.client.callTool({ name: "echo", arguments: { message: "x" } }).catch((x) => x),
    );
    const moved = front.url.replace(/\/mcp$/, "/moved/mcp");
    expect(e.data).toMatchObject({ error: "upstream_http_error", status: 307, location: moved });
    expect(e.message).toContain(`redirects its URL elsewhere (HTTP 307 to ${moved})`);
    expect(String(e.data.retry)).toMatch(/update the server's configured URL/);
    expect(JSON.stringify(e)).not.toContain("secret-in-query");
    expect(front.count("POST", 307)).toBe(1);
  });
});
