// HTTP delivery under `run --listen`: each HTTP session is its own gateway, server and agent run,
// with an egress proxy of its own whose release window is that session's gateway. Real
// processes: `portcullis run --listen` from a portcullis.json, v1 SDK HTTP clients, the Node
// fixture server (global fetch, node:https, a timer that tags its ticks with its pid) and
// loopback upstreams that record what they receive.
import { readdirSync, writeFileSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, pending } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { type Listener, startListener } from "../http/listen.js";
import { openSession } from "../http/raw.js";
import { approvedCall, egressKit, nodeServer, PLACEHOLDER, released, SECRET, text } from "./egress-kit.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

/** `run --listen` serving the kit's project ("api" in its portcullis.json). */
async function listen(dir: string, stateDir: string, args: string[] = [], env: Record<string, string> = {}) {
  const l = await startListener([], {
    configFile: join(dir, "portcullis.json"),
    label: "api",
    stateDir,
    args: ["--listen", "127.0.0.1:0", ...args],
    env,
  });
  k.cleanup.push(() => l.close());
  return l;
}

/** A v1 SDK client: one legacy HTTP session. */
async function session(l: Listener) {
  const client = new Client({ name: "egress-listen-test", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(l.url), {
    requestInit: { headers: { authorization: `Bearer ${l.token}` } },
  });
  await client.connect(transport);
  k.cleanup.push(() => client.close().catch(() => {}));
  return { client, transport };
}

const PROXY_LINE = /egress proxy on http:\/\/127\.0\.0\.1:(\d+)/g;

/** The ports of every session's egress proxy so far, from the front's stderr, in order. */
function proxyPorts(l: Listener): number[] {
  return [...l.stderr().matchAll(PROXY_LINE)].map((m) => Number(m[1]));
}

/** Whether something accepts a TCP connection on that loopback port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

describe("run --listen with deliver: http", () => {
  it("each session has its own release window: A's call releases to the declared host, B's server meanwhile sends the placeholder; A's approval does not cover B", async () => {
    const { plain, tls, other, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const startupUrl = join(tempDir("portcullis-startup-"), "url");
    const dir = k.project(nodeServer, hosts, {
      env: { EGRESS_TIMER_URL: `${plain.url}/timer`, EGRESS_STARTUP_URL_FILE: startupUrl },
    });
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    // the user's own CA setting reaches every session's proxy (the HTTPS upstream's CA)
    const l = await listen(dir, stateDir, [], { NODE_EXTRA_CA_CERTS: tls.caFile });
    const a = await session(l);
    const seen = new Set<string>();
    expect(text(await approvedCall(a, stateDir, "show_env", {}, seen))).toBe(PLACEHOLDER);
    expect(text(await approvedCall(a, stateDir, "fetch_url", { url: `${plain.url}/a` }, seen))).toBe(
      "200 upstream ok /a",
    );
    expect(text(await approvedCall(a, stateDir, "https_get", { url: `${tls.url}/a-tls` }, seen))).toBe(
      "200 upstream ok /a-tls",
    );
    // (a tick of A's timer that goes out while A's call runs is inside A's window: see docs/security.md)
    const calls = () =>
      released(plain)
        .filter((x) => x.path !== "/timer")
        .map((x) => x.path);
    expect(calls()).toEqual(["/a"]);
    // a released value the upstream hands back never reaches the server: the proxy puts the
    // placeholder back into the answer (hostile-egress-echo.test.ts)
    expect(text(await approvedCall(a, stateDir, "fetch_url", { url: `${plain.url}/echo` }, seen))).toBe(
      `200 upstream echo Bearer ${PLACEHOLDER}`,
    );
    expect(released(tls).map((x) => x.path)).toEqual(["/a-tls"]);
    expect(tls.received.map((x) => x.key)).toEqual([SECRET]);
    const ticks = (pid: number) => plain.received.filter((x) => x.path === "/timer" && x.from === pid);
    const pidA = await waitFor(
      () => plain.received.find((x) => x.path === "/timer")?.from,
      10_000,
      "session A's timer",
    );

    // B's server starts after A's, and its new code talks to a host A's never did
    writeFileSync(startupUrl, `${other.url}/b-startup`);
    const b = await session(l);
    await b.client.listTools();
    expect(proxyPorts(l)).toHaveLength(2);
    expect(new Set(proxyPorts(l)).size).toBe(2);
    const pidB = await waitFor(
      () => plain.received.find((x) => x.path === "/timer" && x.from !== pidA)?.from,
      10_000,
      "session B's timer",
    );
    await waitFor(() => other.received.length > 0, 10_000, "B's startup request");

    // A call in flight in A (it waits for the flag between two fetches), while B's timer ticks
    const flag = join(tempDir("portcullis-flag-"), "go");
    const long = approvedCall(a, stateDir, "fetch_url", { url: `${plain.url}/a-long`, after: flag }, seen);
    const opened = await waitFor(
      () => {
        const i = plain.received.findIndex((x) => x.path === "/a-long");
        return i === -1 ? null : i;
      },
      10_000,
      "A's first request",
    );
    // B's ticks inside A's window: the first one that arrived after A's first request may have
    // been decided just before it; each later one started after that one was answered
    const inWindow = () => {
      const afterOpen = ticks(pidB).filter((x) => plain.received.indexOf(x) > opened);
      return afterOpen.slice(1);
    };
    await waitFor(() => inWindow().length >= 3, 10_000, "B's timer ticks during A's call");
    // the window was open in A at that moment: A's own timer got the value meanwhile
    await waitFor(
      () =>
        ticks(pidA).some((x) => plain.received.indexOf(x) > opened && x.authorization === `Bearer ${SECRET}`),
      10_000,
      "a tick of A's timer inside A's window",
    );
    const during = inWindow();
    writeFileSync(flag, "go");
    expect(text(await long)).toBe("200 upstream ok /a-long\n200 upstream ok /a-long");
    expect(calls()).toEqual(["/a", "/echo", "/a-long", "/a-long"]);
    for (const t of during) {
      expect(t.authorization).toBe(`Bearer ${PLACEHOLDER}`);
      expect(t.key).toBe(PLACEHOLDER);
    }
    // B never had a call: none of its requests ever carried the value
    expect(ticks(pidB).filter((x) => x.authorization !== `Bearer ${PLACEHOLDER}`)).toEqual([]);
    expect(other.received.map((x) => x.authorization)).toEqual([`Bearer ${PLACEHOLDER}`]);

    // A's session grant does not cover B: B's first call asks a human, in B's own run
    expect(await pending(stateDir)).toEqual([]);
    const callB = b.client.callTool({ name: "fetch_url", arguments: { url: `${plain.url}/b` } });
    const asked = await waitFor(
      async () => (await pending(stateDir)).find((q) => !seen.has(q.request)) ?? null,
      20_000,
      "B's approval request",
    );
    seen.add(asked.request);
    expect(plain.received.some((x) => x.path === "/b")).toBe(false);
    // the review of B's request names the destination B's epoch contacted that A's never did
    const review = (asked as unknown as { review: { newDestinations?: string[] } }).review;
    expect(review.newDestinations).toEqual([`127.0.0.1:${other.port}`]);
    await decideByCli(stateDir, "approve", asked.request);
    expect(text(await callB)).toBe("200 upstream ok /b");
    expect(calls()).toEqual(["/a", "/echo", "/a-long", "/a-long", "/b"]);

    // the record: per session epoch, each release with its call and epoch, never the value
    type Group = { epoch: string | null; destinations: { port: number; released: number }[] };
    let early: Group[] = [];
    let last: unknown = null; // what the last look saw, for the message if the wait times out
    const egress = await waitFor(
      async () => {
        const r = await runCli(["egress", "api", "--json"], { stateDir });
        const all = (JSON.parse(r.stdout) as { epochs: Group[] }).epochs;
        last = all;
        // A server's timer starts with its process; on a loaded machine it can reach the proxy
        // before the session's epoch is recorded: those requests are listed under no epoch.
        early = all.filter((x) => x.epoch === null);
        const epochs = all.filter((x) => x.epoch !== null);
        return epochs.length === 2 && epochs.every((x) => x.destinations.some((d) => d.port === plain.port))
          ? { epochs }
          : null;
      },
      // each look is a CLI process: under load a few of them take seconds
      30_000,
      "both sessions' epochs in the egress record",
    ).catch((e: Error) => {
      throw new Error(`${e.message}; the last look saw ${JSON.stringify(last)}`);
    });
    // before an epoch exists, nothing is ever released
    for (const g of early) for (const d of g.destinations) expect(d.released).toBe(0);
    const [epochA, epochB] = egress.epochs.map((x) => x.epoch);
    expect(egress.epochs[1]!.destinations.some((d) => d.port === other.port)).toBe(true);
    expect(egress.epochs[0]!.destinations.some((d) => d.port === other.port)).toBe(false);
    await l.close();
    const events = await auditEvents(stateDir);
    const releases = events.filter((e) => e.type === "credential_released");
    expect(new Set(releases.map((e) => e.epoch))).toEqual(new Set([epochA, epochB]));
    expect(releases.every((e) => e.deliver === "http" && typeof e.call === "string")).toBe(true);
    const runs = events.filter((e) => e.type === "run_started").map((e) => e.run);
    expect(new Set(runs).size).toBe(2);
    expect(asked.agentRun).toBe(runs[1]);
    expect(JSON.stringify(events)).not.toContain(SECRET);
    expect(l.stderr()).not.toContain(SECRET);
    expect(l.stderr()).not.toMatch(/does not yet give/);
  });

  it("a session's end closes its proxy: its port refuses connections after DELETE and after the idle timeout", async () => {
    const { hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts);
    await k.storeHttpSecret(stateDir, ...hosts);
    const l = await listen(dir, stateDir);
    const a = await session(l);
    await a.client.listTools();
    const [port] = proxyPorts(l);
    expect(await accepts(port!)).toBe(true);
    const bundles = join(stateDir, "egress");
    expect(readdirSync(bundles)).toHaveLength(1);
    await a.transport.terminateSession();
    await waitFor(async () => !(await accepts(port!)), 10_000, "the proxy's port to close after DELETE");
    // its CA bundles went with it
    await waitFor(() => readdirSync(bundles).length === 0, 10_000, "the session's bundles removed");

    const idle = await listen(dir, stateDir, ["--listen-idle-timeout", "1000"]);
    await openSession(idle);
    const idlePort = await waitFor(() => proxyPorts(idle)[0], 10_000, "the idle session's proxy");
    await waitFor(
      async () => !(await accepts(idlePort)),
      20_000,
      "the proxy's port to close after the idle timeout",
    );
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /idle for 1000 ms: ended/.test(idle.stderr()),
      20_000,
      "the gateway's line on the idle session",
    );
    expect(idle.stderr()).toMatch(/idle for 1000 ms: ended/);
    await waitFor(() => readdirSync(bundles).length === 0, 10_000, "the idle session's bundles removed");
  });

  it('locked → vault_locked in a session; lock mid-call stops releases; egress "declared-only" refuses other hosts per session', async () => {
    const { plain, other, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts, { egress: "declared-only" });
    await k.storeHttpSecret(stateDir, ...hosts);
    const l = await listen(dir, stateDir);
    const a = await session(l);
    await expect(
      a.client.callTool({ name: "fetch_url", arguments: { url: `${plain.url}/locked` } }),
    ).rejects.toMatchObject({ data: { error: "vault_locked" } });
    expect(plain.received).toEqual([]);
    await k.unlock(stateDir);
    const seen = new Set<string>();
    const refused = await approvedCall(a, stateDir, "https_get", { url: `${other.url}/no` }, seen);
    expect(text(refused)).toContain("403 portcullis egress:");
    expect(text(refused)).toContain("declared-only");
    expect(other.received).toEqual([]);
    const flag = join(tempDir("portcullis-flag-"), "go");
    const twice = approvedCall(a, stateDir, "fetch_url", { url: `${plain.url}/twice`, after: flag }, seen);
    await waitFor(() => plain.received.some((x) => x.path === "/twice"), 30_000, "the first request");
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);
    writeFileSync(flag, "go");
    expect(text(await twice)).toBe("200 upstream ok /twice\n200 upstream ok /twice");
    expect(plain.received.filter((x) => x.path === "/twice").map((x) => x.authorization)).toEqual([
      `Bearer ${SECRET}`,
      `Bearer ${PLACEHOLDER}`,
    ]);
    // a second session after the lock: refused too
    const b = await session(l);
    await expect(
      b.client.callTool({ name: "fetch_url", arguments: { url: `${plain.url}/locked-b` } }),
    ).rejects.toMatchObject({ data: { error: "vault_locked" } });
    expect(l.stderr()).not.toContain(SECRET);
  });
});
