// A gateway that cannot read its own PID namespace records it as `unknown` (never empty: an empty
// one marks a row from before namespaces were recorded, which is judged by pid), and its run is
// never judged gone by another process, though the pid it recorded no longer runs
// (docs/security.md, "One agent using another's approval"; src/identity/procLiveness.ts
// recordedPlace and judgeLiveness; src/approval/runs.ts insertRun; src/gateway/registry.ts).
//
// The sandbox is real: `unshare -p -f` WITHOUT --mount-proc, so the gateway runs in a new PID
// namespace but sees the host's /proc. There /proc/self is not its own pid, and ownPlace()
// (src/identity/procRead.ts) cannot trust /proc/self/ns/pid: the gateway cannot read its own
// namespace. Inside, before the gateway starts, the namespace's next pid is set (ns_last_pid,
// which a process writes for its own namespace) so that the gateway's pid in its namespace is the
// host pid of a decoy process (`sleep`) started by this test. The gateway reads its "own" start
// time through the host's /proc, so its rows record (decoy pid, decoy start time): a reader that
// judged the row by pid and start time would find it alive while the decoy runs, and gone once
// the decoy is killed. That is what makes the test able to fail.
//
// What it would catch being removed:
//  - recordedPlace's `?? NAMESPACE_UNREAD` (a null or empty namespace written): the rows' pid_ns
//    would not be 'unknown';
//  - ownPlace's check that /proc/self is this process (the namespace read through another
//    namespace's /proc): the rows would hold a `pid:[…]` link, not 'unknown';
//  - judgeLiveness's refusal to judge an unread namespace (such a row judged by pid and start
//    time, as a row from before namespaces is): once the decoy is gone, the lister would expire
//    the run's pending request and the next gateway would end the run (gateway_gone), ending its
//    session grant.
// A control row, a copy of the sandboxed run written as a version before namespaces did (pid_ns
// and boot null), shows in the same test that judging by pid here says "gone": the next gateway
// ends that one. Each of the three changes above was made on a copy of the build: the test fails
// on each (pid_ns null; pid_ns "pid:[…]"; the pending request expired by the lister).
//
// The sandboxed gateway serves a server reached by URL (an HTTP fixture outside the sandbox): a
// server it launched would be observed through that foreign /proc, where its pid names another
// process, and `run` refuses to launch one there (the second test).
//
// Needs root or user namespaces to make a PID namespace (skipped, and said so in the title,
// without). Runs in a few seconds.
import { spawn, spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { openRecords } from "../../src/audit/index.js";
import { processStartTime } from "../../src/identity/procRead.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { alive, childrenOf, waitFor } from "../helpers/files.js";
import { hostEnv, runCli, startInventory } from "../helpers/gateway.js";
import { LinePeer } from "../helpers/linePeer.js";
import { CLI, NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { startFixture } from "../http/upstreamFixture.js";

/** A new PID namespace, the host's /proc kept; the namespace torn down when unshare dies. */
const NS = ["-p", "--kill-child"];
/** In the namespace: the next pid is $PID (a host pid of ours); then "$@" runs as a child (never exec'd). */
const SET_NEXT_PID = 'echo $(($PID - 1)) > /proc/sys/kernel/ns_last_pid || exit 97; "$@"; exit $?';

/** Why the sandbox cannot be made here, or null when it can. */
function sandboxUnavailable(): string | null {
  if (process.platform !== "linux") return "PID namespaces are Linux only";
  const r = spawnSync("unshare", [...NS, "sh", "-c", SET_NEXT_PID, "sh", "true"], {
    stdio: "ignore",
    timeout: 10_000,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", PID: "1000" },
  });
  if (r.error) return `unshare cannot run (${(r.error as NodeJS.ErrnoException).code})`;
  return r.status === 0
    ? null
    : "unshare -p (and ns_last_pid in the new namespace) is not permitted (needs root or user namespaces)";
}
const UNAVAILABLE = sandboxUnavailable();
const title = (t: string) => (UNAVAILABLE ? `${t} (skipped: ${UNAVAILABLE})` : t);

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The gateway in the sandbox, its pid there being `pid`, spoken to in raw JSON-RPC lines. */
class UnreadGateway extends LinePeer {
  /** `server`: what follows run's options (`--url URL`, or `-- COMMAND`) */
  constructor(project: Project, stateDir: string, pid: number, runArgs: string[], server: string[]) {
    const gateway = [NODE, CLI, "run", "--state-dir", stateDir, "--label", "inventory", ...runArgs];
    super("unshare", [...NS, "sh", "-c", SET_NEXT_PID, "sh", ...gateway, ...server], {
      cwd: project.dir,
      env: hostEnv({ ...project.env, PID: String(pid) }),
    });
  }

  override open(): Promise<void> {
    return super.open("sandboxed-client");
  }

  /** The gateway's host pid (unshare → sh → node), for the test to see it die. */
  hostPid(): number {
    const sh = Number(childrenOf(this.child.pid!).split(" ")[0]);
    return Number(childrenOf(sh).split(" ")[0]);
  }
}

interface Pending {
  request: string;
  tool: string;
  agentRun: string;
}

async function pending(stateDir: string): Promise<Pending[]> {
  const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { requests: Pending[] }).requests;
}

async function grants(stateDir: string) {
  const r = await runCli(["grants", "--json", "--state-dir", stateDir]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { grants: { grant: string; agentRun: string; runAlive: boolean }[] })
    .grants;
}

interface StatusGateway {
  pid: number;
  running: boolean;
  liveness: string;
}

async function status(stateDir: string): Promise<StatusGateway[]> {
  const r = await runCli(["status", "--json", "--state-dir", stateDir]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { gateways: StatusGateway[] }).gateways;
}

interface RunRow {
  run: string;
  gateway_pid: number;
  gateway_pid_start: string | null;
  gateway_pid_ns: string | null;
  gateway_boot: string | null;
  ended_at: string | null;
  ended_reason: string | null;
}

function rows(stateDir: string) {
  const db = openStore(stateDir);
  try {
    return {
      runs: db.prepare("SELECT * FROM runs ORDER BY started_at, run").all() as RunRow[],
      gateways: db.prepare("SELECT pid, pid_start, pid_ns, boot FROM gateways ORDER BY started_at").all() as {
        pid: number;
        pid_start: string | null;
        pid_ns: string | null;
        boot: string | null;
      }[],
    };
  } finally {
    db.close();
  }
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

/** A gateway started on the host on the same state directory (it ends the runs it judges gone), then closed. */
async function hostGatewayStarts(project: Project, stateDir: string): Promise<string> {
  const gw = await startInventory(project, ["--approval", "none"], { stateDir });
  await gw.client.listTools();
  await gw.close();
  return gw.stderr();
}

describe("a gateway that cannot read its own PID namespace", () => {
  it.skipIf(UNAVAILABLE !== null)(
    title(
      "records it as unknown in its runs and gateways rows, and its run, grant and request are never judged gone",
    ),
    async () => {
      const project = makeProject("A");
      const stateDir = newStateDir();
      cleanup.push(() => project.cleanup());
      // the decoy: its host pid becomes the sandboxed gateway's pid in its namespace
      const decoy = spawn("sleep", ["600"], { stdio: "ignore" });
      const decoyExited = new Promise<void>((r) => decoy.on("exit", () => r()));
      cleanup.push(() => {
        decoy.kill("SIGKILL");
      });
      const decoyPid = decoy.pid!;
      const decoyStart = await waitFor(() => processStartTime(decoyPid), 5_000, "the decoy's start time");

      const upstream = await startFixture({}, null);
      cleanup.push(() => upstream.kill());
      const gw = new UnreadGateway(
        project,
        stateDir,
        decoyPid,
        ["--approval", "session", "--approval-timeout", "60000"],
        ["--url", upstream.url],
      );
      cleanup.push(() => gw.kill());
      await gw.open();

      // a session grant of its run, and a request of it left pending
      const first = gw.send("tools/call", { name: "echo", arguments: { message: "hi" } });
      const asked = await waitFor(
        async () => (await pending(stateDir)).find((p) => p.tool === "echo") ?? null,
        20_000,
        "the echo request",
      );
      const ok = await runCli(["approve", asked.request, "--for", "session", "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(ok.code, ok.stderr).toBe(0);
      expect((await first).error, gw.stderr).toBeUndefined();
      void gw.send("tools/call", { name: "note", arguments: { text: "n" } });
      const waiting = await waitFor(
        async () => (await pending(stateDir)).find((p) => p.tool === "note") ?? null,
        20_000,
        "the note request",
      );

      // Recorded: the namespace as 'unknown' (never null or empty), with the pid and start time
      // it read, which are the decoy's (the setup that makes judging by pid possible).
      const before = rows(stateDir);
      expect(before.runs).toHaveLength(1);
      const sandboxed = before.runs[0]!;
      expect(sandboxed).toMatchObject({
        gateway_pid: decoyPid,
        gateway_pid_start: decoyStart,
        gateway_pid_ns: "unknown",
        ended_at: null,
      });
      expect(sandboxed.gateway_boot).toMatch(/\S/);
      expect(before.gateways).toEqual([
        { pid: decoyPid, pid_start: decoyStart, pid_ns: "unknown", boot: sandboxed.gateway_boot },
      ]);

      // The control: the same gateway columns as a row from before namespaces were recorded.
      const control = "01CONTR0LRVNW1THN0NAMESPCE";
      const db = openStore(stateDir);
      try {
        db.prepare(
          `INSERT INTO runs (run, server_label, gateway_pid, gateway_pid_start, gateway_pid_ns, gateway_boot,
                             chain_json, chain_digest, started_at)
           SELECT ?, server_label, gateway_pid, gateway_pid_start, NULL, NULL, chain_json, chain_digest, started_at
             FROM runs WHERE run = ?`,
        ).run(control, sandboxed.run);
      } finally {
        db.close();
      }

      // The pid the rows name no longer runs the process with that start time.
      decoy.kill("SIGKILL");
      await decoyExited;
      await waitFor(() => !alive(decoyPid), 5_000, "the decoy to be gone");
      expect(processStartTime(decoyPid)).not.toBe(decoyStart);

      // A lister (closes the requests of gone gateways), then a gateway starting (ends their runs).
      expect((await pending(stateDir)).map((p) => p.request)).toContain(waiting.request);
      await hostGatewayStarts(project, stateDir);
      const judged = rows(stateDir).runs;
      // judging by pid says "gone" here: the control row is ended
      expect(judged.find((r) => r.run === control)).toMatchObject({ ended_reason: "gateway_gone" });
      // the sandboxed run is not: its grant still covers, its request is still pending
      expect(judged.find((r) => r.run === sandboxed.run)).toMatchObject({
        ended_at: null,
        ended_reason: null,
      });
      expect((await grants(stateDir)).filter((g) => g.agentRun === sandboxed.run)).toEqual([
        expect.objectContaining({ runAlive: true }),
      ]);
      expect((await pending(stateDir)).map((p) => p.request)).toEqual([waiting.request]);
      const listed = (await status(stateDir)).find((g) => g.pid === decoyPid);
      expect(listed).toMatchObject({ running: true, liveness: "unknown" });

      // And once the sandboxed gateway itself is killed, nothing here can tell: still never gone.
      const hostPid = gw.hostPid();
      expect(hostPid).toBeGreaterThan(0);
      await gw.kill();
      await waitFor(() => !alive(hostPid), 10_000, "the sandboxed gateway to be gone");
      expect((await pending(stateDir)).map((p) => p.request)).toEqual([waiting.request]);
      await hostGatewayStarts(project, stateDir);
      expect(rows(stateDir).runs.find((r) => r.run === sandboxed.run)).toMatchObject({ ended_at: null });
      expect((await grants(stateDir)).filter((g) => g.agentRun === sandboxed.run)).toHaveLength(1);
      expect((await status(stateDir)).find((g) => g.pid === decoyPid)?.liveness).toBe("unknown");

      const written = await events(stateDir);
      expect(written.filter((e) => e.type === "run_ended" && e.reason === "gateway_gone")).toEqual([
        expect.objectContaining({ run: control }),
      ]);
      expect(written.filter((e) => e.type === "approval_expired" && e.request === waiting.request)).toEqual(
        [],
      );
    },
    90_000,
  );

  it.skipIf(UNAVAILABLE !== null)(
    title("refuses to launch a server there: its pid would name another process in that /proc"),
    async () => {
      const project = makeProject("A");
      cleanup.push(() => project.cleanup());
      const stateDir = newStateDir();
      const gw = new UnreadGateway(project, stateDir, 1000, [], ["--", ...project.command]);
      cleanup.push(() => gw.kill());
      await gw.exited;
      expect(gw.child.exitCode, gw.stderr).toBe(2);
      expect(gw.stderr).toMatch(
        /^portcullis run: the \/proc mounted here is another PID namespace's \(\/proc\/self is \d+, this process is \d+\), so the server's processes cannot be observed/,
      );
      expect(gw.stderr).toContain("unshare --pid --fork --mount-proc");
      // nothing of the server ran, nothing was recorded
      expect(project.counter()).toBe(0);
      expect(rows(stateDir).runs).toEqual([]);
    },
    30_000,
  );

  it.skipIf(UNAVAILABLE !== null)(
    title("doctor there says a gateway cannot launch a server, and what to do"),
    () => {
      const stateDir = newStateDir();
      const r = spawnSync(
        "unshare",
        [...NS, "sh", "-c", SET_NEXT_PID, "sh", NODE, CLI, "doctor", "--json", "--state-dir", stateDir],
        { encoding: "utf8", timeout: 30_000, env: hostEnv({ PID: "1000" }) },
      );
      expect(r.status, r.stderr).toBe(1);
      const report = JSON.parse(r.stdout) as { findings: { ok: boolean; what: string; next: string }[] };
      const found = report.findings.find((f) => /cannot launch a server/.test(f.what));
      expect(found, r.stdout).toMatchObject({ ok: false });
      expect(found!.what).toMatch(/the \/proc mounted here is another PID namespace's/);
      expect(found!.next).toContain("unshare --pid --fork --mount-proc");
    },
  );
});
