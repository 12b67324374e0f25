// Another process keeps the store's write lock longer than the busy timeout (a database browser
// with an unsaved edit, an sqlite3 shell inside BEGIN): the gateway's own bookkeeping writes (its
// status row's heartbeat, from a timer) fail, and must not take the gateway and its server down.
// Real gateway, real server, a real second process holding the lock.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { activeGrants } from "../../src/approval/grants.js";
import { listGateways } from "../../src/gateway/registry.js";
import { openExistingStore } from "../../src/store/db.js";
import { auditActivity, decideByCli, nextStoredRequest, verifiedAuditEvents } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { alive, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { makeProject } from "../helpers/project.js";
import { rawGateway, slowWriteAtServer } from "../helpers/raw.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

/**
 * Every process that meets the lock here waits 2 s for it instead of SQLite's default 10 s: what is
 * proven (the failure said, survived, recovered from) does not depend on how long the wait was.
 */
const SHORT_BUSY = { PORTCULLIS_BUSY_TIMEOUT_MS: "2000" };
/**
 * A command that must fail on the lock (approve, revoke) waits less still: its refusal is the same
 * sentence after any wait, and nothing else of it goes on meanwhile.
 */
const COMMAND_BUSY = { PORTCULLIS_BUSY_TIMEOUT_MS: "300" };

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A gateway in front of the revisioned project at revision A, with these run flags, listed once. */
async function listedInventory(args: string[], env: Record<string, string> = {}) {
  const stateDir = newStateDir();
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const gw = await startInventory(project, args, { stateDir, env: { ...SHORT_BUSY, ...env } });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { stateDir, project, gw };
}

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

/**
 * The gateways' rows as `portcullis status --json` (`--all`: `status --all --json`) lists them,
 * read in the test process: the rows are what is proven here, not the command that prints them.
 */
function gatewayRows(stateDir: string, all = false) {
  const db = openExistingStore(stateDir);
  try {
    return listGateways(db, { all });
  } finally {
    db.close();
  }
}

describe("a store locked by another process past the busy timeout", () => {
  it("a gateway, idle and with a call at its server, serves on and catches up once the lock is gone", async () => {
    // The heartbeat (the status row's rewrite, 5 s by default) every second here: the first to
    // meet the lock and the first after it are what the test waits for, not the period. With
    // PORTCULLIS_DEBUG, each failure not said again is a debug line (src/gateway/registry.ts).
    const { stateDir, project, gw } = await listedInventory(["--approval", "none"], {
      PORTCULLIS_STORE_CHECK_MS: "1000",
      PORTCULLIS_DEBUG: "1",
    });
    // a call at the server (its intent written) while the lock is taken
    const slow = gw.client.callTool({ name: "slow_write", arguments: {} });
    await waitFor(() => project.counter() === 1, 10_000, "slow_write at the server");

    const lock = await holdStoreLock(stateDir);
    let held = true;
    cleanup.push(() => (held ? lock.release() : undefined));
    // the heartbeat (every 1 s here) waits for the lock (half a second at most), then fails: said once, survived
    const said = await gw.waitForStderr(/cannot update this gateway's row in the store/, 40_000);
    expect(said).toContain(stateDir);
    expect(said).toMatch(/locked by another process/);
    // held past another failed heartbeat (one a second, each waiting half a second), a
    // debug line: a gateway that said it at every failed heartbeat would say it again instead
    // (the count below)
    await waitFor(
      () =>
        /debug: this gateway's row is still not written \(busy\)/.test(gw.stderr()) ||
        gw.stderr().match(/cannot update this gateway's row/g)!.length > 1,
      40_000,
      "another failed heartbeat",
    );
    await lock.release();
    held = false;
    await gw.waitForStderr(/is writable again/, 30_000);

    project.release();
    expect(text(await slow)).toMatch(/^slow_write released/);
    expect(text(await gw.client.callTool({ name: "read_status", arguments: {} }))).toMatch(/"revision":"A"/);
    expect(gw.stderr()).not.toMatch(/SqliteError|database is locked|internal error/);
    expect(gw.stderr().match(/cannot update this gateway's row/g)).toHaveLength(1);
    expect(gatewayRows(stateDir).map((g) => g.pid)).toEqual([gw.pid]);
  }, 120_000);
});

describe("a call's records meeting a lock held by another process", () => {
  it("a result's record and the next call's intent wait without holding the event loop: pings are answered, the call is not forwarded before its intent, and all is recorded once the lock goes", async () => {
    // Before, each group of records that met the lock waited the whole busy timeout (10 minutes
    // here) inside SQLite with the event loop held: nothing at all was answered meanwhile.
    const { stateDir, project, gw } = await listedInventory(["--approval", "none"], {
      PORTCULLIS_BUSY_TIMEOUT_MS: "600000",
      PORTCULLIS_STORE_CHECK_MS: "600000",
    });
    const first = gw.client.callTool({ name: "slow_write", arguments: {} });
    await waitFor(() => project.counter() === 1, 10_000, "slow_write at the server");
    const release = await locked(stateDir);
    // the answer is relayed, then its record meets the lock
    project.release();
    expect(text(await first)).toMatch(/^slow_write released/);
    await gw.waitForStderr(/is locked by another process: the audit records/, 20_000);
    for (let i = 0; i < 3; i++) await gw.client.ping();

    // the next call's intent waits for the lock; the server does not see the call meanwhile
    let answered = false;
    const second = gw.client.callTool({ name: "slow_write", arguments: {} }).finally(() => {
      answered = true;
    });
    for (let i = 0; i < 3; i++) await gw.client.ping();
    expect(answered).toBe(false);
    expect(project.counter()).toBe(1);

    await release();
    expect(text(await second)).toMatch(/^slow_write released/);
    expect(project.counter()).toBe(2);
    await gw.waitForStderr(/is writable again: \d+ audit record\(s\) that waited for it written/, 20_000);
    // the second call's result is committed after its answer was written: waited for, not read once
    const isCallRecord = (e: Record<string, unknown>) => e.type === "tool_called" || e.type === "tool_result";
    await waitForAuditEvents(
      stateDir,
      (all) => all.filter((e) => isCallRecord(e) && e.tool === "slow_write").length >= 4,
      "both slow_write calls' intents and results",
    );
    const events = await verifiedAuditEvents(stateDir);
    const calls = events.filter(isCallRecord);
    expect(calls.slice(-4).map((e) => [e.type, e.tool])).toEqual([
      ["tool_called", "slow_write"],
      ["tool_result", "slow_write"],
      ["tool_called", "slow_write"],
      ["tool_result", "slow_write"],
    ]);
    expect(gw.stderr()).not.toMatch(/stayed locked|cannot record|SqliteError|internal error/);
  }, 120_000);

  it("held past the busy timeout: the waiting call is refused audit_unavailable, never forwarded, the gateway answered meanwhile and said so once", async () => {
    const { stateDir, project, gw } = await listedInventory(["--approval", "none"], {
      PORTCULLIS_STORE_CHECK_MS: "600000",
    });
    const release = await locked(stateDir);
    const refused = gw.client.callTool({ name: "slow_write", arguments: {} }).then(
      () => null,
      (e: unknown) => e as { code: number; message: string; data?: { error?: string } },
    );
    await gw.waitForStderr(/is locked by another process: the audit records/, 20_000);
    await gw.client.ping();
    const e = await refused;
    expect(e?.code).toBe(-32603);
    expect(e?.data?.error).toBe("audit_unavailable");
    expect(project.counter()).toBe(0);
    const said = gw.stderr();
    expect(said.match(/stayed locked by another process for 2000 ms/g), said).toHaveLength(1);
    await release();
    // the gateway goes on: the next call is recorded and runs
    project.release();
    expect(text(await gw.client.callTool({ name: "slow_write", arguments: {} }))).toMatch(
      /^slow_write released/,
    );
    expect(project.counter()).toBe(1);
  }, 120_000);
});

/** The grants as `portcullis grants --json` lists them, read in the test process (its subject is not the listing). */
function activeSessionGrants(stateDir: string) {
  const db = openExistingStore(stateDir);
  try {
    return activeGrants(db);
  } finally {
    db.close();
  }
}

/** The lock of `stateDir`'s store, held by another process until the returned release. */
async function locked(stateDir: string): Promise<() => Promise<void>> {
  const lock = await holdStoreLock(stateDir);
  let held = true;
  const release = async () => {
    if (held) await lock.release();
    held = false;
  };
  cleanup.push(release);
  return release;
}

const LOCKED_SENTENCE = "is locked by another process, and stayed locked while this one waited.";

describe("a store locked by another process while a call needs a human, or a command writes", () => {
  it("the gateway's own row waits for a held lock only briefly: its heartbeat never holds the event loop a busy timeout, and what needs no store is answered meanwhile", async () => {
    // Before, every heartbeat (and the row's write at a start) waited the whole busy timeout with
    // the event loop held (10 minutes here): a SIGTERM during a start under such a lock took 40 s
    // to end the gateway at the default 10 s, and nothing at all was answered meanwhile.
    const { stateDir, gw } = await listedInventory(["--approval", "none"], {
      PORTCULLIS_BUSY_TIMEOUT_MS: "600000",
      PORTCULLIS_STORE_CHECK_MS: "1000",
    });
    const release = await locked(stateDir);
    await gw.waitForStderr(/cannot update this gateway's row in the store/, 20_000);
    // a ping is relayed without the store: answered while the lock is held, between heartbeats
    for (let i = 0; i < 3; i++) await gw.client.ping();
    await release();
    await gw.waitForStderr(/is writable again/, 20_000);
    expect(gatewayRows(stateDir).map((g) => g.pid)).toEqual([gw.pid]);
  }, 60_000);

  it("a call that needs approval waits for the store and gets its request; the human's approval lets it through", async () => {
    const { stateDir, gw } = await listedInventory([]);

    const release = await locked(stateDir);
    const call = gw.client.callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 120_000 });
    const said = await gw.waitForStderr(/is locked by another process: the approval request/, 40_000);
    expect(said).toContain(stateDir);
    await release();
    const request = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", request.request, "--for", "session");
    expect(text(await call)).toMatch(/"revision":"A"/);
    expect(gw.stderr()).not.toMatch(/could not handle|SqliteError/);
  }, 120_000);

  it("a call that needs a human while the store is locked holds nothing else: pings are answered, and its request, stored once the lock goes, is recorded once", async () => {
    // Before, the request's record was written with an explicit flush that waited the whole busy
    // timeout (10 minutes here) with the event loop held.
    const { stateDir, gw } = await listedInventory([], {
      PORTCULLIS_BUSY_TIMEOUT_MS: "600000",
      PORTCULLIS_STORE_CHECK_MS: "600000",
    });
    const release = await locked(stateDir);
    const call = gw.client.callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 120_000 });
    await gw.waitForStderr(/is locked by another process: the audit records/, 20_000);
    for (let i = 0; i < 3; i++) await gw.client.ping();
    await release();
    const request = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", request.request, "--for", "session");
    expect(text(await call)).toMatch(/"revision":"A"/);
    const asked = (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "approval_requested");
    expect(asked.map((e) => e.approvalRequest)).toEqual([request.request]);
    expect(gw.stderr()).not.toMatch(/could not handle|SqliteError|stayed locked/);
  }, 120_000);

  it("two identical calls that need a human while the store is locked join one request: one human decision answers both", async () => {
    // The request is stored with the audit sink's next group, once the lock goes: the second
    // call, asking meanwhile, must join the request being stored, not make another.
    const { stateDir, gw } = await listedInventory([], {
      PORTCULLIS_BUSY_TIMEOUT_MS: "600000",
      PORTCULLIS_STORE_CHECK_MS: "600000",
    });
    const release = await locked(stateDir);
    const opts = { timeout: 120_000 };
    const first = gw.client.callTool({ name: "read_status", arguments: {} }, undefined, opts);
    await gw.waitForStderr(/is locked by another process: the audit records/, 20_000);
    const second = gw.client.callTool({ name: "read_status", arguments: {} }, undefined, opts);
    // (read and decided up to the request while the lock is held: a ping behind it is answered)
    await gw.client.ping();
    await release();
    const request = await nextStoredRequest(stateDir);
    await gw.waitForStderr(new RegExp(`joins approval request ${request.request}`), 20_000);
    await decideByCli(stateDir, "approve", request.request, "--for", "session");
    expect(text(await first)).toMatch(/"revision":"A"/);
    expect(text(await second)).toMatch(/"revision":"A"/);
    const asked = (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "approval_requested");
    expect(asked.map((e) => e.approvalRequest)).toEqual([request.request]);
  }, 120_000);

  it("a per-call call whose approval comes while the store is locked waits to take it, then runs once", async () => {
    const { stateDir, project, gw } = await listedInventory([
      "--approval",
      "per-call",
      "--approval-timeout",
      "120000",
    ]);
    const call = gw.client.callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 120_000 });
    const request = await nextStoredRequest(stateDir);

    // The gateway is stopped while the human approves and the lock is taken: its next poll is
    // the first to see the approval, and it must take the one-call grant under the lock.
    gw.kill("SIGSTOP");
    let stopped = true;
    const resume = () => {
      if (stopped) gw.kill("SIGCONT");
      stopped = false;
    };
    cleanup.push(resume);
    const ok = await decideByCli(stateDir, "approve", request.request, "--for", "call");
    expect(ok.code, ok.stderr).toBe(0);
    const release = await locked(stateDir);
    resume();
    const said = await gw.waitForStderr(/is locked by another process: the one-call approval of/, 40_000);
    expect(said).toContain(stateDir);
    await release();

    expect(text(await call)).toMatch(/"revision":"A"/);
    expect(project.records().filter((r) => r.tool === "read_status")).toHaveLength(1);
    expect(gw.stderr()).not.toMatch(/could not handle|SqliteError|internal error/);
  }, 120_000);

  it("a call after an epoch change while the store is locked is refused stale, not failed; the next asks a human", async () => {
    const { stateDir, project, gw } = await listedInventory(["--on-change", "restart"]);
    const first = gw.client.callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 120_000 });
    const request = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", request.request, "--for", "session");
    expect(text(await first)).toMatch(/"revision":"A"/);

    const from = gw.stderr().length;
    project.rebuild("B");
    await waitFor(
      () => /new execution epoch: .*; restart\)/.test(gw.stderr().slice(from)),
      20_000,
      "epoch B",
    );
    await gw.client.listTools(); // the new epoch's catalog, verified and stored before the lock

    // step 2 ends the session grant of epoch A: a write that meets the lock
    const release = await locked(stateDir);
    const stale = (await gw.client
      .callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 120_000 })
      .catch((e) => e)) as { code: number; data: Record<string, unknown> };
    expect(stale.code).toBe(-32051);
    expect(stale.data).toMatchObject({ error: "authorization_stale", approvedEpoch: request.executionEpoch });
    // the gateway's stderr and its answer travel on different pipes: wait for the line
    await gw.waitForStderr(/stale grant\(s\) stay live in it, ended for this gateway/);
    await release();

    // reported once: the next call asks a human for epoch B, and the old grant covers nothing
    const again = gw.client.callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 120_000 });
    const seen = new Set([request.request]);
    const next = await nextStoredRequest(stateDir, seen);
    expect(next.executionEpoch).not.toBe(request.executionEpoch);
    await decideByCli(stateDir, "approve", next.request, "--for", "session");
    expect(text(await again)).toMatch(/"revision":"B"/);
    expect(gw.stderr()).not.toMatch(/could not handle|SqliteError|internal error/);
  }, 120_000);

  it("approve and revoke exit 2 with the store's sentence, never an internal error; a gateway started meanwhile waits and serves", async () => {
    const { stateDir, project, gw } = await listedInventory([]);
    const first = gw.client.callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 120_000 });
    const request = await nextStoredRequest(stateDir);

    let release = await locked(stateDir);
    const approve = await runCli(["approve", "--next", "--for", "session", "--state-dir", stateDir], {
      env: { ...passphraseEnv(), ...COMMAND_BUSY },
    });
    expect(approve.code, approve.stderr).toBe(2);
    expect(approve.stderr).toContain(
      `portcullis approve: the store ${stateDir}/portcullis.db ${LOCKED_SENTENCE}`,
    );
    expect(approve.stderr).not.toMatch(/internal error|SqliteError|\n\s+at /);
    await release();

    await decideByCli(stateDir, "approve", request.request, "--for", "session");
    await first;
    const [grant] = activeSessionGrants(stateDir);

    release = await locked(stateDir);
    const revoke = await runCli(["revoke", grant!.grant, "--state-dir", stateDir], {
      env: { ...passphraseEnv(), ...COMMAND_BUSY },
    });
    expect(revoke.code, revoke.stderr).toBe(2);
    expect(revoke.stderr).toContain(LOCKED_SENTENCE);
    expect(revoke.stderr).not.toMatch(/internal error|SqliteError/);

    await release();

    // A gateway starting while the lock is held: its first write (its status row) waits out the
    // busy timeout and fails, said once, and it starts all the same. The client's first request
    // comes while the lock is still held (the run's row waits for it), and the lock goes then.
    const held = await holdStoreLock(stateDir);
    cleanup.push(() => held.release());
    const lateGw = rawGateway({
      args: ["--label", "late", "--approval", "none", "--", ...project.command],
      cwd: project.dir,
      env: { ...project.env, ...SHORT_BUSY },
      stateDir,
    });
    cleanup.push(() => lateGw.close());
    await waitFor(
      () => /cannot update this gateway's row in the store .*locked by another process/.test(lateGw.stderr()),
      60_000,
      "the late gateway's status row failing on the lock",
    );
    const initialized = lateGw.initialize({}, 60_000);
    await held.release();
    await initialized;
    const res = await lateGw.request("tools/call", { name: "read_status", arguments: {} }, 60_000);
    expect(text(res.result)).toMatch(/"revision":"A"/);
    expect(lateGw.stderr()).not.toMatch(/internal error|SqliteError/);
  }, 180_000);
});

describe("a gateway ending while another process holds the store's lock", () => {
  it("the server is ended before anything waits for the store; a lock let go in the last attempt loses nothing", async () => {
    // A server that ignores its input (sleep): only the gateway's SIGTERM, a timer after the
    // grace, ends it. Every write of the gateway that meets the lock would wait far longer than the
    // test (10 minutes), and its heartbeat is pushed out of the way.
    const stateDir = newStateDir();
    const pidFile = join(stateDir, "server.pid");
    const gw = rawGateway({
      args: ["--label", "sleeper", "--", "sh", "-c", `echo $$ > '${pidFile}'; exec sleep 60`],
      env: {
        PORTCULLIS_BUSY_TIMEOUT_MS: "600000",
        PORTCULLIS_STORE_CHECK_MS: "600000",
        PORTCULLIS_SHUTDOWN_GRACE_MS: "300",
      },
      stateDir,
    });
    cleanup.push(() => gw.close());
    await waitFor(() => /serving /.test(gw.stderr()) && existsSync(pidFile), 20_000, "the server's start");
    const pid = Number(readFileSync(pidFile, "utf8").trim());

    const release = await locked(stateDir);
    gw.kill("SIGTERM");
    // its stop (stdin closed, SIGTERM after the grace) waits for no write: it was behind the
    // status row's and the server's exit's, each waiting out the lock with the event loop held
    await waitFor(() => !alive(pid), 30_000, "the server's end while the lock is held");
    await release();
    // the gateway's one wait for the lock ends with it: everything is recorded, as without a lock
    expect(await gw.exited).toMatchObject({ code: 0 });
    expect(gw.stderr()).not.toMatch(/stayed locked|cannot record|SqliteError|internal error/);
    const events = await verifiedAuditEvents(stateDir);
    expect(events.filter((e) => e.type === "server_exited").map((e) => e.why)).toEqual(["shutdown"]);
    const [row] = gatewayRows(stateDir, true);
    expect(row?.state).toBe("ended");
  }, 120_000);

  it("a client that closes its input with a call at the server: the answer comes, the server ends while the lock is held, and a lock let go in the last attempt loses nothing", async () => {
    // Before, the gateway waited for its client's last answers with the store's usual busy
    // timeout: the answer's record met the lock and held the event loop the whole busy timeout
    // (10 minutes here) before the shutdown could even begin, and so for each answer.
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = rawGateway({
      args: ["--label", "inventory", "--approval", "none", "--", ...project.command],
      cwd: project.dir,
      env: {
        ...project.env,
        PORTCULLIS_BUSY_TIMEOUT_MS: "600000",
        PORTCULLIS_STORE_CHECK_MS: "600000",
        PORTCULLIS_SHUTDOWN_GRACE_MS: "300",
      },
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.initialize({}, 20_000);
    await gw.request("tools/list", {}, 20_000);
    const status = await gw.request("tools/call", { name: "read_status", arguments: {} }, 20_000);
    const { pid } = JSON.parse(text(status.result)) as { pid: number };
    await slowWriteAtServer(gw, project);

    const release = await locked(stateDir);
    gw.closeStdin();
    project.release();
    // the client still gets its answer (forwarded before its record is written)
    const answer = await gw.next((m) => m.id === "slow", 20_000);
    expect(answer.result).toBeDefined();
    await waitFor(() => !alive(pid), 30_000, "the server's end while the lock is held");
    await release();
    expect(await gw.exited).toMatchObject({ code: 0 });
    expect(gw.stderr()).not.toMatch(/stayed locked|cannot record|SqliteError|internal error/);
    // kept while the lock was held, written in the last attempt: the call's result is recorded
    const activity = await auditActivity(stateDir);
    expect(activity.find((a) => a.tool === "slow_write")).toMatchObject({ outcome: "ok" });
  }, 120_000);

  it("a second signal cuts the last attempt short: the gateway ends with the lock still held", async () => {
    const stateDir = newStateDir();
    const pidFile = join(stateDir, "server.pid");
    const gw = rawGateway({
      args: ["--label", "sleeper", "--", "sh", "-c", `echo $$ > '${pidFile}'; exec sleep 60`],
      env: {
        PORTCULLIS_BUSY_TIMEOUT_MS: "600000",
        PORTCULLIS_STORE_CHECK_MS: "600000",
        PORTCULLIS_SHUTDOWN_GRACE_MS: "300",
      },
      stateDir,
    });
    cleanup.push(() => gw.close());
    await waitFor(() => /serving /.test(gw.stderr()) && existsSync(pidFile), 20_000, "the server's start");
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    await locked(stateDir);
    gw.kill("SIGINT");
    await waitFor(() => !alive(pid), 30_000, "the server's end while the lock is held");
    // the gateway now waits for the lock (up to its 10-minute busy timeout): Ctrl-C again
    gw.kill("SIGINT");
    expect(await gw.exited).toMatchObject({ code: 0 });
    expect(gw.stderr().match(/stayed locked by another process/g)).toHaveLength(1);
  }, 120_000);

  it("held past its last attempt: the gateway ends all the same, says once what it left, and the next start closes it", async () => {
    const { stateDir, project, gw } = await listedInventory(["--approval", "none"]);
    const { pid } = JSON.parse(text(await gw.client.callTool({ name: "read_status", arguments: {} }))) as {
      pid: number;
    };
    // a call at the server (its intent written) when the lock is taken
    const slow = gw.client.callTool({ name: "slow_write", arguments: {} }).catch((e: unknown) => e);
    await waitFor(() => project.counter() === 1, 10_000, "slow_write at the server");

    const release = await locked(stateDir);
    gw.kill("SIGTERM");
    await waitFor(() => !alive(pid), 30_000, "the server's end while the lock is held");
    // ended while the lock is still held: one wait (the 2 s busy timeout), not one per write
    expect(await gw.exited).toMatchObject({ code: 0 });
    await slow;
    const said = gw.stderr();
    expect(said.match(/stayed locked by another process/g), said).toHaveLength(1);
    expect(said).toContain(stateDir);
    expect(said).toMatch(/audit records \(.*call_interrupted.*run_ended/);
    // said in that one sentence, not once per write
    expect(said).not.toMatch(/cannot record|could not record|cannot update this gateway's row|SqliteError/);
    await release();

    // The next gateway on the store closes what the first left open, as after a crash; the
    // chain stays whole.
    const next = rawGateway({
      args: ["--label", "inventory", "--approval", "none", "--", ...project.command],
      cwd: project.dir,
      env: project.env,
      stateDir,
    });
    cleanup.push(() => next.close());
    await waitFor(
      () =>
        /closed 1 call\(s\) left open/.test(next.stderr()) && /ended 1 agent run\(s\)/.test(next.stderr()),
      30_000,
      "the next start's recovery",
    );
    next.closeStdin();
    expect(await next.exited).toMatchObject({ code: 0 });
    const events = await verifiedAuditEvents(stateDir);
    const ends = events.filter((e) => e.type === "call_interrupted" || e.type === "run_ended");
    expect(ends.map((e) => [e.type, e.reason])).toEqual([
      ["call_interrupted", "gateway_gone"],
      ["run_ended", "gateway_gone"],
    ]);
    const activity = await auditActivity(stateDir);
    expect(activity.find((a) => a.tool === "slow_write")).toMatchObject({
      outcome: "interrupted",
      interruption: "gateway_gone",
    });
  }, 120_000);
});
