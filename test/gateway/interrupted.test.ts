// Every intent is closed: a call in flight when its gateway is killed (SIGKILL, and the server's
// process group with it) is closed by the next gateway on the same state dir with one
// call_interrupted (outcome unknown), and two gateways starting together close it once.
import { afterEach, describe, expect, it } from "vitest";
import { openRecords } from "../../src/audit/index.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { auditActivity } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, type Session, startInventory } from "../helpers/gateway.js";
import { makeProject, type Project } from "../helpers/project.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Client = Session<import("@modelcontextprotocol/sdk/client/index.js").Client>;

/** The server process the gateway `gw` supervises, from its status row. */
function serverPid(stateDir: string, gw: Client): number {
  const db = openStore(stateDir);
  try {
    const json = db.prepare("SELECT record_json FROM gateways WHERE pid = ?").pluck().get(gw.pid) as string;
    return (JSON.parse(json) as { processId: number }).processId;
  } finally {
    db.close();
  }
}

/** Starts a gateway, puts one slow_write in flight, then kills it and its server's process group. */
async function killedWithACallInFlight(project: Project, stateDir: string, started: number): Promise<void> {
  const gw = await startInventory(project, ["--approval", "none"], { stateDir });
  await gw.client.listTools();
  void gw.client
    .callTool({ name: "slow_write", arguments: {} }, undefined, { timeout: 60_000 })
    .catch(() => {});
  await waitFor(() => project.counter() === started + 1, 15_000, "slow_write to reach the server");
  const server = await waitFor(() => serverPid(stateDir, gw), 5_000, "the server's pid");
  gw.kill("SIGKILL");
  await gw.exited;
  try {
    process.kill(-server, "SIGKILL"); // the server runs in its own process group
  } catch {}
  await gw.close().catch(() => {});
}

async function events(stateDir: string): Promise<{ type: string; [k: string]: unknown }[]> {
  const db = openStore(stateDir);
  try {
    const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
    return [...openRecords(db, auditPrivateKey)].map((r) => r.event);
  } finally {
    db.close();
  }
}

async function startAndStop(project: Project, stateDir: string): Promise<void> {
  const gw = await startInventory(project, ["--approval", "none"], { stateDir });
  await gw.client.listTools();
  await gw.close();
}

describe("a call in flight when its gateway is killed", () => {
  it("is closed as interrupted (outcome unknown) by the next gateway, after each of several kills", async () => {
    const project = makeProject("A");
    const stateDir = newStateDir();
    cleanup.push(() => project.cleanup());
    for (let round = 0; round < 3; round++) {
      await killedWithACallInFlight(project, stateDir, round);
      // no gateway has started since the kill: the call is still open
      const open = (await auditActivity(stateDir)).filter((a) => a.tool === "slow_write");
      expect(open.map((a) => a.outcome)).toEqual([...Array(round).fill("interrupted"), "pending"]);
    }
    await startAndStop(project, stateDir);
    const calls = (await auditActivity(stateDir)).filter((a) => a.tool === "slow_write");
    expect(calls.map((a) => [a.outcome, a.interruption])).toEqual(
      Array(3).fill(["interrupted", "gateway_gone"]),
    );
    const closing = (await events(stateDir)).filter((e) => e.type === "call_interrupted");
    expect(closing).toHaveLength(3);
    for (const e of closing) expect(e).toMatchObject({ reason: "gateway_gone", outcome: "unknown" });
    const verify = await runCli(["audit", "verify", "--json", "--state-dir", stateDir]);
    expect(verify.code).toBe(0);
  });

  it("two gateways starting together close it once", async () => {
    const project = makeProject("A");
    const stateDir = newStateDir();
    cleanup.push(() => project.cleanup());
    await killedWithACallInFlight(project, stateDir, 0);
    await Promise.all([startAndStop(project, stateDir), startAndStop(project, stateDir)]);
    const closing = (await events(stateDir)).filter((e) => e.type === "call_interrupted");
    expect(closing).toHaveLength(1);
    expect(closing[0]).toMatchObject({ tool: "slow_write", reason: "gateway_gone", outcome: "unknown" });
    // a gateway that ended normally leaves nothing open
    const db = openStore(stateDir);
    expect(db.prepare("SELECT count(*) FROM open_intents").pluck().get()).toBe(0);
    db.close();
  });
});

describe("audit sessions and audit activity", () => {
  it("count the same calls on a run with allowed, refused, invalid and cancelled calls; a cancelled request is not denied", async () => {
    const project = makeProject("A");
    const stateDir = newStateDir();
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "per-call", "--approval-timeout", "30000"], {
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const pendingRequests = async () => {
      const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
      return (JSON.parse(r.stdout) as { requests: { request: string }[] }).requests;
    };
    // allowed: a human approves this one call
    const allowed = gw.client.callTool({ name: "read_status", arguments: {} });
    const [req] = await waitFor(
      async () => {
        const p = await pendingRequests();
        return p.length > 0 ? p : null;
      },
      20_000,
      "an approval request",
    );
    const ok = await runCli(["approve", req!.request, "--for", "call", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(ok.code).toBe(0);
    await allowed;
    // refused, and arguments that do not validate
    await gw.client.callTool({ name: "no_such_tool", arguments: {} }).catch(() => {});
    await gw.client.callTool({ name: "adjust_inventory", arguments: { sku: 1 } }).catch(() => {});
    // cancelled: the client gives up while the approval request is pending (which stays pending
    // for a retry: it is neither denied nor cancelled)
    await gw.client
      .callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 1_500 })
      .catch(() => {});
    await gw.waitForStderr(/the call stopped waiting; approval request \S+ stays pending/);
    expect(await pendingRequests()).toHaveLength(1);
    await gw.close();

    const a = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    const s = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(a.code).toBe(0);
    expect(s.code).toBe(0);
    const activity = JSON.parse(a.stdout) as { run: string; outcome: string; decision: string }[];
    const [session, ...more] = JSON.parse(s.stdout) as {
      run: string;
      calls: number;
      counts: Record<string, number>;
      approvals: Record<string, number>;
    }[];
    expect(more).toEqual([]);
    const listed = activity.filter((x) => x.run === session!.run && x.outcome !== "superseded");
    expect(session!.calls).toBe(listed.length);
    expect(session!.counts).toMatchObject({ calls: 3, answered: 1, refused: 1, invalid: 1 });
    expect(session!.approvals).toMatchObject({ requested: 2, granted: 1, denied: 0, cancelled: 0 });
  });
});

describe("a gateway killed before an upgrade (rows written before PID namespaces were recorded)", () => {
  it("is judged by its pid as before: its call closed as interrupted, its run ended, not listed as running", async () => {
    const project = makeProject("A");
    const stateDir = newStateDir();
    cleanup.push(() => project.cleanup());
    await killedWithACallInFlight(project, stateDir, 0);
    // What a portcullis before store migrations 17 and 18 left: no namespace, no boot id.
    const db = openStore(stateDir);
    try {
      expect(db.prepare("UPDATE runs SET gateway_pid_ns = NULL, gateway_boot = NULL").run().changes).toBe(1);
      expect(db.prepare("UPDATE gateways SET pid_ns = NULL, boot = NULL").run().changes).toBe(1);
    } finally {
      db.close();
    }
    await startAndStop(project, stateDir);

    const all = await events(stateDir);
    const killedRun = all.find((e) => e.type === "run_started")!.run;
    expect(all.filter((e) => e.type === "call_interrupted")).toMatchObject([{ reason: "gateway_gone" }]);
    expect(all.filter((e) => e.type === "run_ended" && e.run === killedRun)).toMatchObject([
      { reason: "gateway_gone" },
    ]);
    const status = await runCli(["status", "--json", "--state-dir", stateDir]);
    expect(status.code).toBe(0);
    expect(JSON.stringify(JSON.parse(status.stdout))).not.toContain("cannot tell");
  });
});

describe("the agent run of a killed gateway", () => {
  it("is ended by the next gateway, once: run_ended gateway_gone, its session grant ended, its pending request expired", async () => {
    const project = makeProject("A");
    const stateDir = newStateDir();
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "session", "--approval-timeout", "60000"], {
      stateDir,
    });
    await gw.client.listTools();
    const pending = async () => {
      const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
      return (JSON.parse(r.stdout) as { requests: { request: string; tool: string }[] }).requests;
    };
    const waitRequest = (tool: string) =>
      waitFor(
        async () => (await pending()).find((p) => p.tool === tool) ?? null,
        20_000,
        `an approval request for ${tool}`,
      );
    // a session grant of this run
    const first = gw.client.callTool({ name: "read_status", arguments: {} });
    const req = await waitRequest("read_status");
    const ok = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(ok.code).toBe(0);
    await first;
    // and a request of this run still pending when its gateway dies
    void gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "A-1", delta: 1 } }, undefined, {
        timeout: 60_000,
      })
      .catch(() => {});
    const waiting = await waitRequest("adjust_inventory");
    const server = await waitFor(() => serverPid(stateDir, gw), 5_000, "the server's pid");
    gw.kill("SIGKILL");
    await gw.exited;
    try {
      process.kill(-server, "SIGKILL");
    } catch {}
    await gw.close().catch(() => {});

    const grants = async () => {
      const r = await runCli(["grants", "--json", "--state-dir", stateDir]);
      return (JSON.parse(r.stdout) as { grants: { grant: string }[] }).grants;
    };
    expect(await grants()).toHaveLength(1); // nothing has ended it yet
    await Promise.all([startAndStop(project, stateDir), startAndStop(project, stateDir)]);

    const all = await events(stateDir);
    const killedRun = all.find((e) => e.type === "run_started")!.run;
    const ends = all.filter((e) => e.type === "run_ended" && e.run === killedRun);
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ reason: "gateway_gone", gatewayPid: gw.pid });
    const expired = all.filter((e) => e.type === "approval_expired");
    expect(expired).toHaveLength(1);
    expect(expired[0]).toMatchObject({ approvalRequest: waiting.request, run: killedRun });
    expect(all.indexOf(expired[0]!)).toBeLessThan(all.indexOf(ends[0]!));
    expect(await grants()).toEqual([]);
    expect(await pending()).toEqual([]);
    // the two gateways' own runs ended the ordinary way
    const s = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    const sessions = JSON.parse(s.stdout) as {
      run: string;
      endedAt: string | null;
      endReason: string | null;
    }[];
    expect(sessions).toHaveLength(3);
    expect(sessions.every((x) => x.endedAt !== null)).toBe(true);
    expect(sessions.find((x) => x.run === killedRun)!.endReason).toBe("gateway_gone");
    const verify = await runCli(["audit", "verify", "--json", "--state-dir", stateDir]);
    expect(verify.code).toBe(0);
  });
});
