// `portcullis run --url`: a server reached over Streamable HTTP (HTTPS with a test CA the
// gateway trusts through NODE_EXTRA_CA_CERTS), guarded like a launched one. Real processes:
// the fixture server, the gateway, the official SDK client, the CLI for status and approvals.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Client, Client as SdkClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { remoteUrlProblem } from "../../src/config/remote.js";
import { auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { readJsonLines, tempDir, waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { gatewayRow } from "../helpers/status.js";
import { type FixtureServer, makeTls, startFixture, type Tls } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

let tls: Tls;
beforeAll(async () => {
  tls = await makeTls();
});

interface RemoteRow {
  pid: number;
  state: string;
  epoch: string;
  status: { line: string }[];
  record: {
    epoch: string;
    identityDigest: string;
    remote: {
      url: string;
      certificateChainSha256: string | null;
      serverInfo: { name: string; version: string } | null;
      protocolVersion: string | null;
      capabilities: Record<string, unknown> | null;
      session: string | null;
    };
  };
}

/** The gateway's row as `portcullis status --json` prints it: for the case about status. */
async function status(stateDir: string): Promise<RemoteRow> {
  const r = await runCli(["status", "--json", "--state-dir", stateDir]);
  return (JSON.parse(r.stdout).gateways as RemoteRow[])[0]!;
}

/**
 * The same row read in the test process (listGateways, as status reads it), once `until` holds:
 * where status is not the subject. The CLI was asked every 25 ms while a case waited for a new
 * epoch, a process of about 0.2 s of CPU each.
 */
async function row(
  stateDir: string,
  until: (r: RemoteRow) => boolean = () => true,
  what?: string,
  ms?: number,
) {
  return (await gatewayRow(
    stateDir,
    (r) => until(r as unknown as RemoteRow),
    what,
    ms,
  )) as unknown as RemoteRow;
}

/** Waits until the gateway serves a ready epoch other than `not` (its catalog fetched). */
function nextEpoch(stateDir: string, not: string): Promise<RemoteRow> {
  return row(
    stateDir,
    (s) => s.state === "ready" && s.epoch !== not && s.record?.remote.serverInfo != null,
    `an epoch after ${not}`,
    20_000,
  );
}

async function fixture(env: Record<string, string> = {}): Promise<{ server: FixtureServer; record: string }> {
  const record = join(tempDir("portcullis-http-"), "calls.jsonl");
  const server = await startFixture({ FIXTURE_RECORD: record, ...env }, tls);
  const box = { server, record };
  cleanup.push(() => box.server.kill());
  return box;
}

async function gateway(
  url: string,
  extra: string[] = [],
  stateDir = newStateDir(),
): Promise<Session<Client>> {
  const gw = await startGateway({
    args: ["--url", url, "--label", "remote", ...extra],
    env: { NODE_EXTRA_CA_CERTS: tls.ca.caFile },
    stateDir,
  });
  cleanup.push(() => gw.close());
  return gw;
}

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

describe("the HTTPS fixture itself, with the SDK's own client transport (no gateway)", () => {
  it("lists, calls, records the call, and forgets a session when restarted (404)", async () => {
    const f = await fixture();
    // the SDK client sends through fetch: the test CA is given to its (global) dispatcher
    const { Agent, setGlobalDispatcher, getGlobalDispatcher } = await import("undici");
    const before = getGlobalDispatcher();
    setGlobalDispatcher(new Agent({ connect: { ca: readFileSync(tls.ca.caFile) } }));
    cleanup.push(() => setGlobalDispatcher(before));
    const client = new SdkClient({ name: "direct", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(f.server.url));
    await client.connect(transport);
    cleanup.push(() => client.close());
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["echo", "hang", "note"]);
    expect(text(await client.callTool({ name: "echo", arguments: { message: "d" } }))).toBe("Echo: d");
    expect(readJsonLines(f.record).map((r) => r.tool)).toEqual(["echo"]);
    expect(client.getServerVersion()).toMatchObject({ name: "http-fixture", version: "1.0.0" });
    f.server = await f.server.restart();
    const gone = await client.callTool({ name: "echo", arguments: { message: "e" } }).catch((e) => e);
    expect(String(gone)).toMatch(/404|Session not found/);
  });
});

describe("run --url over HTTPS", () => {
  it("lists and calls through the guard; the record names the URL, the chain digest, serverInfo; status shows them", async () => {
    const f = await fixture();
    const stateDir = newStateDir();
    const gw = await gateway(f.server.url, ["--approval", "none"], stateDir);
    const tools = await gw.client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(["echo", "hang", "note"]);
    expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "hi" } }))).toBe("Echo: hi");
    // the guard is in front: a tool the catalog does not have is refused without reaching the server
    const unknown = refusal(await gw.client.callTool({ name: "nope", arguments: {} }).catch((e) => e));
    expect(unknown.data.error).toBe("tool_not_in_catalog");
    expect(readJsonLines(f.record).map((r) => r.tool)).toEqual(["echo"]);

    const s = await status(stateDir);
    expect(s.record.remote.url).toBe(f.server.url);
    expect(s.record.remote.certificateChainSha256).toBe(tls.chainDigest());
    expect(s.record.remote.serverInfo).toMatchObject({ name: "http-fixture", version: "1.0.0" });
    expect(s.record.remote.protocolVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(s.record.remote.capabilities).toHaveProperty("tools");
    // the audit holds the completed record too, under the identity status shows
    const identified = (await auditEvents(stateDir)).filter((e) => e.type === "server_identified");
    expect(identified).toHaveLength(1);
    expect(identified[0]).toMatchObject({ epoch: s.epoch, identityDigest: s.record.identityDigest });
    expect(identified[0]!.record).toMatchObject({
      remote: {
        serverInfo: { name: "http-fixture", version: "1.0.0" },
        capabilities: { tools: {} },
        transport: "streamable-http",
      },
    });
    const shown = await runCli(["status", "--state-dir", stateDir]);
    expect(shown.stdout).toContain(f.server.url);
    expect(shown.stdout).toContain(tls.chainDigest());
    expect(shown.stdout).toContain("http-fixture");
  });

  it("a serverInfo written to drive a terminal reaches status and the review as text, never as control characters", async () => {
    // Cursor up and erase (hides the line above), a C1 CSI, a window-title OSC: what a hostile
    // server can say of itself, shown to the human who decides on it.
    const f = await fixture({
      FIXTURE_INFO: JSON.stringify({
        name: "evil\r\u001b[1A\u001b[2Kserver",
        version: "1.0\u009b2J",
        title: "\u001b]0;pwned\u0007",
      }),
    });
    const stateDir = newStateDir();
    const gw = await gateway(f.server.url, [], stateDir);
    await gw.client.listTools();
    const call = gw.client.callTool({ name: "echo", arguments: { message: "hi" } });
    const req = await nextStoredRequest(stateDir);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are the subject
    const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
    const views = [
      await runCli(["status", "--state-dir", stateDir]),
      await runCli(["approvals", "--verbose", "--state-dir", stateDir]),
      await decideByCli(stateDir, "approve", req.request),
    ];
    for (const v of views) {
      const out = v.stdout + v.stderr;
      expect(out).toContain("evil");
      expect(out, JSON.stringify(out)).not.toMatch(CONTROL);
    }
    expect(text(await call)).toBe("Echo: hi");
  });

  it("a restarted server is a new session and a new epoch: the old epoch's grant is stale", async () => {
    const f = await fixture();
    const stateDir = newStateDir();
    const gw = await gateway(f.server.url, ["--approval-timeout", "30000"], stateDir);
    await gw.client.listTools();
    const first = gw.client.callTool({ name: "note", arguments: { text: "a" } });
    const req = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    expect(text(await first)).toContain("noted");
    const epochA = (await row(stateDir, (r) => r.epoch !== null)).epoch;

    f.server = await f.server.restart();
    const b = await nextEpoch(stateDir, epochA);
    expect(b.record.remote.session).not.toBeNull();
    expect(b.status.map((l) => l.line).join("\n")).toMatch(
      /new execution epoch: url=\S+ epoch=\S+ \(was \S+; new-session\)/,
    );

    const stale = refusal(
      await gw.client.callTool({ name: "note", arguments: { text: "b" } }).catch((e) => e),
    );
    expect(stale.code).toBe(-32051);
    expect(stale.data).toMatchObject({
      error: "authorization_stale",
      approvedEpoch: epochA,
      currentEpoch: b.epoch,
    });
    // the person asked again is not told the same code runs: nothing over the wire shows the code
    await gw.client.listTools();
    const again = gw.client.callTool({ name: "note", arguments: { text: "c" } }).catch((e) => e);
    const req2 = await nextStoredRequest(stateDir, new Set([req.request]));
    const page = (await runCli(["approvals", "--state-dir", stateDir])).stdout;
    expect(page).toContain(
      `new execution epoch since the last approval (${epochA}): a new session with the remote server; portcullis cannot tell whether its code changed`,
    );
    expect(page).not.toContain("the same code was started again");
    await decideByCli(stateDir, "deny", req2.request);
    expect(refusal(await again).data.error).toBe("approval_denied");
    // the refused calls never reached the new server
    expect(readJsonLines<{ args: Record<string, unknown> }>(f.record).map((r) => r.args.text)).toEqual(["a"]);
  });

  it("over http:// (no certificate on either side) a restarted server is a new session, never a certificate change", async () => {
    const server = await startFixture({}, null);
    const box = { server };
    cleanup.push(() => box.server.kill());
    const stateDir = newStateDir();
    const gw = await gateway(server.url, ["--approval", "none"], stateDir);
    await gw.client.listTools();
    const a = await row(stateDir, (r) => r.record !== null);
    expect(a.record.remote.certificateChainSha256).toBeNull();

    box.server = await server.restart();
    const b = await nextEpoch(stateDir, a.epoch);
    expect(b.record.remote.certificateChainSha256).toBeNull();
    expect(b.status.map((l) => l.line).join("\n")).toMatch(/\(was \S+; new-session\)/);
    const started = (await auditEvents(stateDir)).filter(
      (e) => e.type === "server_started" && e.epoch === b.epoch,
    );
    expect(started).toEqual([expect.objectContaining({ reason: "new-session" })]);
  });

  it("a new certificate on a new connection is a new epoch", async () => {
    const f = await fixture();
    const stateDir = newStateDir();
    const gw = await gateway(f.server.url, ["--approval", "none"], stateDir);
    await gw.client.listTools();
    const a = await row(stateDir, (r) => r.record !== null);
    const before = tls.chainDigest();
    expect(a.record.remote.certificateChainSha256).toBe(before);

    await tls.renew();
    f.server.proc.kill("SIGUSR2"); // new certificate, every connection closed; sessions kept
    const b = await nextEpoch(stateDir, a.epoch);
    expect(tls.chainDigest()).not.toBe(before);
    expect(b.record.remote.certificateChainSha256).toBe(tls.chainDigest());
    expect(b.status.map((l) => l.line).join("\n")).toContain("certificate-changed");
    await gw.client.listTools();
    expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "again" } }))).toBe(
      "Echo: again",
    );
  });

  it("the DELETE that ends the session at shutdown goes out only on a connection that presents the epoch's chain", async () => {
    // No server-to-client stream (405), so nothing tells the gateway of the new certificate
    // before it shuts down: its DELETE (the session id, the configured header) is the first
    // request on a new connection. Before, that connection's chain was never looked at.
    const VALUE = "hdr-value-8d2e61c0a4";
    const requests = join(tempDir("portcullis-http-"), "requests.jsonl");
    const f = await fixture({
      FIXTURE_NO_GET_STREAM: "1",
      FIXTURE_HEADER: "X-Api-Key",
      FIXTURE_REQUEST_LOG: requests,
    });
    const seen = () => readJsonLines<{ method: string; value: string | null; certificate: number }>(requests);
    const start = async () => {
      const gw = await gateway(f.server.url, ["--approval", "none", "--header", `X-Api-Key: ${VALUE}`]);
      await gw.client.listTools();
      expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "x" } }))).toBe("Echo: x");
      return gw;
    };
    // The same chain: the session is ended with its DELETE, as ever.
    await (await start()).close();
    expect(seen().filter((r) => r.method === "DELETE")).toEqual([
      { method: "DELETE", value: VALUE, certificate: 0 },
    ]);

    const gw = await start();
    const before = seen().length;
    await tls.renew();
    f.server.proc.kill("SIGUSR2"); // new certificate, every connection closed; sessions kept
    await waitFor(() => f.server.stderr().includes("certificate reloaded"), 10_000, "the new certificate");
    await gw.close();
    expect(seen().slice(before)).toEqual([]);
  });

  it("a server that comes back describing itself differently (serverInfo) is a new epoch whose review names it", async () => {
    const f = await fixture();
    const stateDir = newStateDir();
    const gw = await gateway(f.server.url, ["--approval-timeout", "30000"], stateDir);
    await gw.client.listTools();
    const first = gw.client.callTool({ name: "note", arguments: { text: "a" } });
    const req1 = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", req1.request, "--for", "session");
    await first;
    const a = await row(stateDir, (r) => r.record !== null);

    f.server = await f.server.restart({ FIXTURE_NAME: "someone-else", FIXTURE_VERSION: "6.6.6" });
    const b = await nextEpoch(stateDir, a.epoch);
    expect(b.record.remote.serverInfo).toMatchObject({ name: "someone-else", version: "6.6.6" });
    expect(b.record.remote.certificateChainSha256).toBe(a.record.remote.certificateChainSha256);

    // the grant of the epoch before is stale (reported once), then a human is asked again
    const stale = refusal(
      await gw.client.callTool({ name: "note", arguments: { text: "b" } }).catch((e) => e),
    );
    expect(stale.data).toMatchObject({
      error: "authorization_stale",
      approvedEpoch: a.epoch,
      currentEpoch: b.epoch,
    });
    await gw.client.listTools();
    const second = gw.client.callTool({ name: "note", arguments: { text: "b" } }).catch((e) => e);
    const req2 = await nextStoredRequest(stateDir, new Set([req1.request]));
    const shown = await runCli(["approvals", "--json", "--state-dir", stateDir]);
    const review = (
      JSON.parse(shown.stdout).requests as {
        request: string;
        review: { epoch: { changedParts: string[] } };
      }[]
    ).find((r) => r.request === req2.request)!.review;
    expect(review.epoch.changedParts).toContain("serverInfo");
    // the person deciding sees which remote, which certificate chain, and what it says it is
    const page = (await runCli(["approvals", "--state-dir", stateDir])).stdout;
    expect(page).toContain(`remote     ${f.server.url}`);
    expect(page).toContain(`tls chain  ${tls.chainDigest()}`);
    expect(page).toContain("someone-else");
    await decideByCli(stateDir, "deny", req2.request);
    expect(refusal(await second).data.error).toBe("approval_denied");
    expect(readJsonLines<{ args: Record<string, unknown> }>(f.record).map((r) => r.args.text)).toEqual(["a"]);
  });

  it("a server that dies mid-call: epoch_transition, the call is never sent again", async () => {
    const f = await fixture();
    const stateDir = newStateDir();
    const gw = await gateway(f.server.url, ["--approval", "none"], stateDir);
    await gw.client.listTools();
    const epochA = (await row(stateDir, (r) => r.epoch !== null)).epoch;
    const hanging = gw.client
      .callTool({ name: "hang", arguments: {} }, undefined, { timeout: 60_000 })
      .catch((e) => e);
    await waitFor(() => readJsonLines(f.record).length === 1, 10_000, "the call to reach the server");
    await f.server.kill("SIGKILL");
    const e = refusal(await hanging);
    expect(e.code).toBe(-32054);
    expect(e.data).toMatchObject({ error: "epoch_transition" });

    // the server comes back: a new epoch serves, and the interrupted call was not replayed to it
    f.server = await f.server.restart();
    await nextEpoch(stateDir, epochA);
    await gw.client.listTools();
    expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "after" } }))).toBe(
      "Echo: after",
    );
    expect(readJsonLines(f.record).map((r) => r.tool)).toEqual(["hang", "echo"]);
  });
});

describe("run --url: a server that keeps no sessions", () => {
  it("answering GET with 404 (no route for it) offers no stream: one epoch serves on, nothing is lost", async () => {
    const record = join(tempDir("portcullis-stateless-"), "calls.jsonl");
    const server = await startFixture({ FIXTURE_STATELESS: "1", FIXTURE_RECORD: record }, null);
    cleanup.push(() => server.kill());
    const stateDir = newStateDir();
    const gw = await gateway(server.url, ["--approval", "none"], stateDir);
    await gw.client.listTools();
    const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;
    expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "one" } }))).toBe("Echo: one");
    // the server-to-client stream was asked for after initialized, and again on a timer had it
    // been refused for a passing reason: time for either to end the epoch, as a 404 did
    await new Promise((r) => setTimeout(r, 1500));
    expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "two" } }))).toBe("Echo: two");
    expect(gw.stderr()).not.toMatch(/remote session ended/);
    const started = (await auditEvents(stateDir)).filter((e) => e.type === "server_started");
    expect(started).toHaveLength(1);
    expect(readJsonLines<{ args: { message: string } }>(record).map((c) => c.args.message)).toEqual([
      "one",
      "two",
    ]);
  });
});

describe("run --url: what does not apply, and what is refused", () => {
  it("a server that cannot be reached, or whose certificate is not trusted, is exit 2 with the reason", async () => {
    const f = await fixture();
    const untrusted = await runCli(["run", "--state-dir", newStateDir(), "--url", f.server.url]);
    expect(untrusted.code).toBe(2);
    expect(untrusted.stderr).toMatch(/cannot reach https:\/\/127\.0\.0\.1:\d+\/mcp: .*certificate/);
    await f.server.kill();
    const gone = await runCli(["run", "--state-dir", newStateDir(), "--url", f.server.url], {
      env: { NODE_EXTRA_CA_CERTS: tls.ca.caFile },
    });
    expect(gone.code).toBe(2);
    expect(gone.stderr).toMatch(/cannot reach .*ECONNREFUSED/);
  });

  it("refuses --watch, --on-change, http:// to a remote host, and a user:password URL, each in one sentence", async () => {
    const watch = await runCli(["run", "--url", "https://example.com/mcp", "--watch", "*.js"]);
    expect(watch.code).toBe(2);
    expect(watch.stderr).toMatch(/--watch does not apply to a server reached by URL/);
    const change = await runCli(["run", "--url", "https://example.com/mcp", "--on-change", "restart"]);
    expect(change.code).toBe(2);
    expect(change.stderr).toMatch(/--on-change does not apply/);
    const insecure = await runCli(["run", "--url", "http://example.com/mcp"]);
    expect(insecure.code).toBe(2);
    expect(insecure.stderr).toMatch(/http:\/\/ to a host that is not loopback.*--allow-insecure/);
    const userinfo = await runCli(["run", "--url", "https://me:pw@example.com/mcp"]);
    expect(userinfo.code).toBe(2);
    expect(userinfo.stderr).toMatch(/must not carry a user name or password/);
    expect(userinfo.stderr).not.toContain("pw@");

    // Names that only look loopback, or resolve to it by DNS (whose answer can change by the next
    // connection), and a token as a bare user name (the CLI's sentence is the same path as above:
    // checked here in process).
    for (const url of [
      "http://localhost.evil.test/mcp",
      "http://127.0.0.1.nip.io/mcp",
      "http://127-0-0-1.sslip.io/mcp",
      "http://localtest.me/mcp",
      "http://localhost./mcp",
      "http://console.localhost/mcp",
      "http://0.0.0.0:8080/mcp",
      "http://0/mcp",
      "http://[::]/mcp",
      "http://[::2]/mcp",
      "http://[::127.0.0.1]/mcp",
      "http://[::ffff:10.0.0.1]/mcp",
    ])
      expect(remoteUrlProblem(url, false), url).toMatch(/http:\/\/ to a host that is not loopback/);
    for (const url of [
      "https://ghp_token123@example.com/mcp",
      "http://127.0.0.1@evil.test/mcp",
      "http://evil.test@127.0.0.1/mcp",
    ])
      expect(remoteUrlProblem(url, true), url).toMatch(/^must not carry a user name or password/);
    for (const url of [
      "http://127.0.0.1:8080/mcp",
      "http://localhost/mcp",
      "http://[::1]:3000/mcp",
      "http://127.1/mcp",
      // the same loopback addresses in the notations the URL parser folds, as `--listen` takes them
      "http://2130706433/mcp",
      "http://0x7f000001/mcp",
      "http://0177.0.0.1/mcp",
      "http://%6cocalhost/mcp",
      "http://LOCALHOST/mcp",
      "http://[0:0:0:0:0:0:0:1]/mcp",
      "http://[::ffff:127.0.0.1]/mcp",
      "http://[::ffff:7f00:1]/mcp",
    ])
      expect(remoteUrlProblem(url, false), url).toBeNull();
  });

  // Which queries are refused is remoteUrlProblem's (checked here in process for each URL, and
  // its classification in test/util/redact.test.ts); that the CLI refuses with that sentence,
  // exit 2, the value never shown, is the same path for every URL: one CLI process shows it.
  const QUERY_REFUSED = /must not carry a credential in its query .* send it with a header instead/;

  it("refuses a URL whose query carries a secret-like parameter, without showing its value", async () => {
    const urls = [
      "https://example.com/mcp?api_key=SECRET-VALUE-1",
      "https://example.com/mcp?team=a&access_token=SECRET-VALUE-1",
      "https://example.com/mcp?key=SECRET-VALUE-1",
      "https://example.com/mcp?X-Amz-Signature=SECRET-VALUE-1",
    ];
    for (const url of urls) {
      const problem = remoteUrlProblem(url, false);
      expect(problem, url).toMatch(QUERY_REFUSED);
      expect(problem, url).not.toContain("SECRET-VALUE-1");
    }
    const r = await runCli(["run", "--state-dir", newStateDir(), "--url", urls[1]!]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(QUERY_REFUSED);
    expect(r.stderr).toContain('(parameter "access_token")');
    expect(r.stderr).not.toContain("SECRET-VALUE-1");
  });

  it("refuses a URL whose query value looks like a credential under a plain name, without showing it", async () => {
    const token = "Zq8Kp2LmN4vX7bR1tY9wQ3eH";
    const urls = [
      `https://example.com/mcp?k=${token}`,
      `https://example.com/mcp?team=a&s=${token}`,
      `https://example.com/mcp?sig=short1`,
    ];
    for (const url of urls) {
      const problem = remoteUrlProblem(url, false);
      expect(problem, url).toMatch(QUERY_REFUSED);
      expect(problem, url).not.toContain(token);
      expect(problem, url).not.toContain("short1");
    }
    const r = await runCli(["run", "--state-dir", newStateDir(), "--url", urls[1]!]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(QUERY_REFUSED);
    expect(r.stderr).toContain('(parameter "s", whose value looks like a generated key)');
    expect(r.stderr).not.toContain(token);
  });
});
