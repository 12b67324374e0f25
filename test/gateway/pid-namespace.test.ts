// Gateways on one state directory may live in different PID namespaces (a container or a
// bubblewrap sandbox sharing the directory). A pid recorded in one namespace names another
// process, or none, in the other: a gateway or CLI there must never take a live gateway for gone
// (ending its run, its session grant, its pending request), and a request of a gateway it cannot
// see is still one a human may decide, by its ID (`--next` passes it by: that gateway's command
// line cannot be read from here, so it cannot be told to be portcullis's). Real processes in a real namespace: `unshare -p -f
// --mount-proc` (needs root or user namespaces; the tests say so and are skipped without it).
// The same for the gateways' own rows: a sandboxed gateway must not close a live host gateway's
// calls in flight as interrupted, and `status` lists a gateway it cannot see, never as gone.
import { spawn, spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { openRecords } from "../../src/audit/index.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { waitFor } from "../helpers/files.js";
import { hostEnv, runCli, startInventory } from "../helpers/gateway.js";
import { LinePeer } from "../helpers/linePeer.js";
import { CLI, NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const NS = ["-p", "-f", "--mount-proc"];

/** Why a process cannot be started in a new PID namespace here, or null when it can. */
function unshareUnavailable(): string | null {
  if (process.platform !== "linux") return "PID namespaces are Linux only";
  const r = spawnSync("unshare", [...NS, "true"], { stdio: "ignore", timeout: 10_000 });
  if (r.error) return `unshare cannot run (${(r.error as NodeJS.ErrnoException).code})`;
  return r.status === 0
    ? null
    : "unshare -p -f --mount-proc is not permitted (needs root or user namespaces)";
}
const UNAVAILABLE = unshareUnavailable();
const title = (t: string) => (UNAVAILABLE ? `${t} (skipped: ${UNAVAILABLE})` : t);

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The CLI run in a new PID namespace. */
function nsCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("unshare", [...NS, NODE, CLI, ...args], { env: hostEnv(passphraseEnv()) });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d;
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d;
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** A gateway in its own PID namespace, spoken to in raw JSON-RPC lines. */
class NsGateway extends LinePeer {
  constructor(project: Project, stateDir: string, runArgs: string[]) {
    const args = [CLI, "run", "--state-dir", stateDir, "--label", "inventory", ...runArgs, "--"];
    super("unshare", [...NS, NODE, ...args, ...project.command], {
      cwd: project.dir,
      env: hostEnv(project.env),
    });
  }

  override open(): Promise<void> {
    return super.open("ns-client");
  }
}

async function pending(stateDir: string) {
  const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { requests: { request: string; tool: string }[] }).requests;
}

const waitRequest = (stateDir: string, tool: string) =>
  waitFor(
    async () => (await pending(stateDir)).find((p) => p.tool === tool) ?? null,
    20_000,
    `an approval request for ${tool}`,
  );

async function grants(stateDir: string) {
  const r = await runCli(["grants", "--json", "--state-dir", stateDir]);
  return (JSON.parse(r.stdout) as { grants: { grant: string; runAlive: boolean }[] }).grants;
}

/** The host's gateway in front of the revisioned project at revision A, with these run flags, listed once. */
async function listedHost(args: string[]) {
  const project = makeProject("A");
  const stateDir = newStateDir();
  cleanup.push(() => project.cleanup());
  const host = await startInventory(project, args, { stateDir });
  cleanup.push(() => host.close());
  await host.client.listTools();
  return { project, stateDir, host };
}

describe("gateways in different PID namespaces on one state directory", () => {
  it.skipIf(UNAVAILABLE !== null)(
    title("a gateway or a CLI in another namespace never ends a live gateway's run, grant or request"),
    async () => {
      const { project, stateDir, host } = await listedHost([
        "--approval",
        "session",
        "--approval-timeout",
        "60000",
      ]);
      // a session grant of the host's run, and a request of it still pending
      const first = host.client.callTool({ name: "read_status", arguments: {} });
      const req = await waitRequest(stateDir, "read_status");
      const ok = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(ok.code).toBe(0);
      await first;
      const adjust = host.client.callTool(
        { name: "adjust_inventory", arguments: { sku: "A-1", delta: 1 } },
        undefined,
        {
          timeout: 60_000,
        },
      );
      const waiting = await waitRequest(stateDir, "adjust_inventory");

      // a lister there (closes what it takes for abandoned) and a gateway starting there
      const listed = await nsCli(["approvals", "--json", "--state-dir", stateDir]);
      expect(listed.code).toBe(0);
      const ns = new NsGateway(project, stateDir, ["--approval", "none"]);
      await ns.open();
      await ns.close();
      expect(ns.stderr).not.toMatch(/gateways that are gone/);

      // the host's run is intact: its grant, its pending request, and a human can decide it
      expect(await grants(stateDir)).toHaveLength(1);
      expect((await pending(stateDir)).map((p) => p.request)).toContain(waiting.request);
      const db = openStore(stateDir);
      try {
        const open = db.prepare("SELECT count(*) FROM runs WHERE ended_at IS NULL").pluck().get();
        expect(open).toBe(1);
      } finally {
        db.close();
      }
      const decided = await runCli(["approve", "--next", "--for", "call", "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(decided.code).toBe(0);
      expect(decided.stdout).toContain(waiting.request);
      // answered by the server (not refused by the gateway): it ran on the approval
      expect(await adjust).toHaveProperty("content");
      // and the session grant still covers: no new request
      const again = await host.client.callTool({ name: "read_status", arguments: {} });
      expect(again.isError).toBeFalsy();
    },
    90_000,
  );

  it.skipIf(UNAVAILABLE !== null)(
    title("a request of a gateway in another namespace can be decided from here"),
    async () => {
      const project = makeProject("A");
      const stateDir = newStateDir();
      cleanup.push(() => project.cleanup());
      const ns = new NsGateway(project, stateDir, ["--approval", "session", "--approval-timeout", "60000"]);
      cleanup.push(() => ns.close());
      await ns.open();
      const call = ns.send("tools/call", { name: "read_status", arguments: {} });
      const req = await waitRequest(stateDir, "read_status");
      // a lister here must not close it as the request of a gone gateway
      expect((await pending(stateDir)).map((p) => p.request)).toEqual([req.request]);
      // --next passes it by: the gateway's command line cannot be read from here, and a row
      // naming another namespace is any process's to write (deny first); its ID decides it
      const next = await runCli(["approve", "--next", "--for", "session", "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(next.code).toBe(2);
      expect(next.stderr).toContain(
        "the gateway of the one pending request is not, by its command line as read here, a portcullis gateway",
      );
      expect(next.stderr).toContain("another PID namespace");
      const decided = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(decided.code, decided.stderr).toBe(0);
      const answer = await call;
      expect(answer.error).toBeUndefined();
      expect((await grants(stateDir)).map((g) => g.runAlive)).toEqual([true]);
    },
    90_000,
  );
});

async function events(stateDir: string): Promise<{ type: string; [k: string]: unknown }[]> {
  const db = openStore(stateDir);
  try {
    const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
    return [...openRecords(db, auditPrivateKey)].map((r) => r.event);
  } finally {
    db.close();
  }
}

interface StatusGateway {
  pid: number;
  state: string;
  running: boolean;
  liveness: string;
  unseen: string | null;
}

async function statusFrom(where: "host" | "namespace", stateDir: string): Promise<StatusGateway[]> {
  const args = ["status", "--json", "--state-dir", stateDir];
  const r = where === "host" ? await runCli(args) : await nsCli(args);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { gateways: StatusGateway[] }).gateways;
}

describe("gateways' own rows across PID namespaces", () => {
  it.skipIf(UNAVAILABLE !== null)(
    title(
      "a gateway starting in another namespace leaves a live gateway's call in flight open; status lists both",
    ),
    async () => {
      const { project, stateDir, host } = await listedHost(["--approval", "none"]);
      const slow = host.client.callTool({ name: "slow_write", arguments: {} }, undefined, {
        timeout: 60_000,
      });
      await waitFor(() => project.counter() === 1, 15_000, "slow_write to reach the server");

      // a gateway starting in a sandbox on the same state directory closes the calls of gateways it judges gone
      const ns = new NsGateway(project, stateDir, ["--approval", "none"]);
      cleanup.push(() => ns.close());
      await ns.open();
      expect(ns.stderr).not.toMatch(/left open by a gateway that is gone/);

      // status here lists both, the sandboxed one as running in another namespace (never as gone);
      // so does a status in a third namespace (each unshare makes a new one), for both
      const here = await statusFrom("host", stateDir);
      expect(here.map((g) => [g.running, g.liveness, g.unseen])).toEqual([
        [true, "alive", null],
        [true, "unknown", "another PID namespace"],
      ]);
      const there = await statusFrom("namespace", stateDir);
      expect(there.map((g) => [g.running, g.liveness, g.unseen])).toEqual([
        [true, "unknown", "another PID namespace"],
        [true, "unknown", "another PID namespace"],
      ]);
      const text = await runCli(["status", "--state-dir", stateDir]);
      expect(text.stdout).toMatch(/gateway pid \d+ \(in another PID namespace: not this one's pid\)/);

      // the host's call ends as the server answers it, and nothing said it was interrupted
      project.release();
      const answer = await slow;
      expect(answer.isError).toBeFalsy();
      expect(JSON.stringify(answer.content)).toContain("slow_write");
      await ns.close();
      const written = await events(stateDir);
      expect(written.filter((e) => e.type === "call_interrupted")).toEqual([]);
      expect(written.filter((e) => e.type === "tool_result" && e.tool === "slow_write")).toHaveLength(1);
    },
    90_000,
  );
});

describe("a gateway whose run another process ended", () => {
  it("says so on its log and answers a call needing approval at once", async () => {
    const { project, stateDir, host } = await listedHost([
      "--approval",
      "session",
      "--approval-timeout",
      "60000",
    ]);
    // Another gateway misjudges the host gone (here: its recorded start time made wrong), and ends its run.
    const db = openStore(stateDir);
    try {
      db.prepare("UPDATE runs SET gateway_pid_start = '1'").run();
    } finally {
      db.close();
    }
    const other = await startInventory(project, ["--approval", "none"], { stateDir });
    await other.client.listTools();
    await other.close();
    const r = await host.client
      .callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 60_000 })
      .catch((e) => e);
    expect(r.data).toMatchObject({ error: "authorization_required", reason: "agent run ended" });
    expect(r.message).toContain("its agent run was ended by another process");
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /was ended in the store by another process/.test(host.stderr()),
      20_000,
      "the gateway's line on the ended run",
    );
    expect(host.stderr()).toMatch(
      /agent run \S+ was ended in the store by another process \(reason gateway_gone in its row, .*the row says ended at \S+\)/,
    );
    expect(await pending(stateDir)).toEqual([]);
  }, 90_000);
});
