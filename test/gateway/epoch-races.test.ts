// A call is forwarded only under the execution epoch of the code that will run it, also when the
// agent races the supervisor: a watcher's worker killed before a call (the watcher's next worker,
// started on new code, would read it from the pipe) or while the call waits for a human (looked at
// again before it is written), and a watched file written, called and put
// back before the watcher's capture has judged it.
import {
  closeSync,
  existsSync,
  ftruncateSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { listGateways } from "../../src/gateway/registry.js";
import { openExistingStore } from "../../src/store/db.js";
import {
  auditEvents,
  decideByCli,
  nextStoredRequest,
  type Pending,
  storedPending,
  waitForPending,
} from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";
import { nodeWatchGateway } from "../helpers/watchGateway.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Gateway = RawPeer & { stateDir: string };

/** The audit's events so far (read while the gateway runs: what is durable). */
const events = (stateDir: string) =>
  auditEvents(stateDir) as Promise<{ type: string; [k: string]: unknown }[]>;

/**
 * For a server that outlives its closed stdin (node --watch, a shell loop): the gateway's end
 * sends SIGTERM after 200 ms instead of the default 1.5 s grace (a restart's stop too). How the
 * gateway ends is not what these tests are about.
 */
const QUICK_STOP = { PORTCULLIS_SHUTDOWN_GRACE_MS: "200" };

/**
 * The epoch of the state directory's running gateway (other than `not`, when given), read as
 * `portcullis status --json` reads it (listGateways on its store) but in the test process:
 * status is not what these tests are about, and as a CLI process each read cost about 0.2 s of
 * CPU (14 in this file). The gateway's row is written as an epoch comes up, or when the store was
 * busy then, at its next write: waited for, as test/gateway/approval-epoch-ended.test.ts does
 * (the CLI's own start hid that wait). The one test that reads the gateway's state still asks
 * the CLI.
 */
async function epochOf(stateDir: string, not?: string): Promise<string> {
  return waitFor(
    () => {
      const db = openExistingStore(stateDir);
      try {
        const epoch = listGateways(db)[0]?.epoch;
        return epoch !== not ? epoch : null;
      } finally {
        db.close();
      }
    },
    10_000,
    not ? `the gateway's row to show an epoch other than ${not}` : "the gateway's row to show its epoch",
  );
}

/** What a tool answered (its text, parsed), or null for an error. */
function answered(m: WireMessage): Record<string, unknown> | null {
  const content = (m.result as { content?: { text: string }[] } | undefined)?.content;
  return content ? JSON.parse(content[0]!.text) : null;
}

async function callTool(gw: Gateway, name: string): Promise<Record<string, unknown>> {
  const m = await gw.request("tools/call", { name, arguments: {} }, 20_000);
  const value = answered(m);
  if (value === null) throw new Error(`${name} was refused: ${JSON.stringify(m.error)}`);
  return value;
}

/** Kills the server's worker `pid` outright and waits until it is gone. */
async function killWorker(pid: number): Promise<void> {
  process.kill(pid, "SIGKILL");
  await waitFor(() => !existsSync(`/proc/${pid}`), 10_000, "the worker to be gone");
}

/** Sends the read_status call "after-kill" without waiting for its answer. */
const sendAfterKill = (gw: Gateway) =>
  gw.send({ jsonrpc: "2.0", id: "after-kill", method: "tools/call", params: { name: "read_status" } });

/** The epochs the audit's intents of the call "after-kill" were recorded under, so far. */
const afterKillEpochs = async (stateDir: string) =>
  (await events(stateDir))
    .filter((e) => e.type === "tool_called" && e.requestId === "after-kill")
    .map((e) => e.epoch);

async function started(gw: Gateway): Promise<void> {
  cleanup.push(() => gw.close());
  await gw.initialize({}, 20_000);
  await gw.request("tools/list", {}, 20_000);
}

describe("a watcher's worker killed before a call", () => {
  it.skipIf(process.platform !== "linux")(
    "node --watch: the call waits for the next worker and its epoch; it is never recorded or sent under the killed worker's",
    async () => {
      const project = makeProject("A");
      cleanup.push(() => project.cleanup());
      const gw = nodeWatchGateway(project, { env: QUICK_STOP });
      await started(gw);
      const first = await callTool(gw, "read_status");
      expect(first.revision).toBe("A");
      const e1 = await epochOf(gw.stateDir);

      // The worker is killed (node --watch waits for a change to start the next one) ...
      const worker = first.pid as number;
      await killWorker(worker);
      // ... a call is sent, and reaches the gateway: held, or (before the fix) recorded and sent
      // into the pipe nobody reads ...
      sendAfterKill(gw);
      await waitFor(
        async () =>
          /holding tools\/call "read_status"/.test(gw.stderr()) ||
          (await afterKillEpochs(gw.stateDir)).length > 0,
        15_000,
        "the gateway to hold or forward the call",
      );
      // ... then new code is written: node --watch starts it, and it reads what is in the pipe.
      project.rebuild("C");
      const answer = answered(await gw.next((m) => m.id === "after-kill", 30_000));

      // The call was never recorded (nor sent) under E1; the new code answers it under its own epoch.
      const called = await afterKillEpochs(gw.stateDir);
      expect(called.length).toBeGreaterThan(0);
      expect(called).not.toContain(e1);
      expect(answer).toMatchObject({ revision: "C" });
      expect(answer!.pid).not.toBe(worker);
      expect(await epochOf(gw.stateDir, e1)).not.toBe(e1);
      // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
      await waitFor(
        () => /process \d+, which held the gateway's pipe, went away/.test(gw.stderr()),
        20_000,
        "the gateway's line on the worker gone",
      );
      expect(gw.stderr()).toMatch(/process \d+, which held the gateway's pipe, went away/);
    },
  );

  it.skipIf(process.platform !== "linux")(
    "a restart loop (sh: node; sleep): the process that holds the pipe between two workers counts as the next one",
    async () => {
      const project = makeProject("A");
      cleanup.push(() => project.cleanup());
      writeFileSync(
        join(project.dir, "loop.sh"),
        // ends once its gateway is gone (a gateway killed before it stopped its server would
        // leave the loop running for good)
        `while kill -0 $PPID 2>/dev/null; do ${JSON.stringify(NODE)} dist/server.js; sleep 1; done\n`,
      );
      const gw = rawGateway({
        args: ["--label", "inventory", "--approval", "none", "--", "sh", "loop.sh"],
        cwd: project.dir,
        env: { ...project.env, ...QUICK_STOP },
      });
      await started(gw);
      const first = await callTool(gw, "read_status");
      const e1 = await epochOf(gw.stateDir);
      project.rebuild("C"); // onChange report: the change is told, the running worker kept
      await killWorker(first.pid as number);
      sendAfterKill(gw);
      const answer = answered(await gw.next((m) => m.id === "after-kill", 30_000));
      const called = await afterKillEpochs(gw.stateDir);
      expect(called.length).toBeGreaterThan(0);
      expect(called).not.toContain(e1);
      expect(answer).toMatchObject({ revision: "C" });
      expect(await epochOf(gw.stateDir, e1)).not.toBe(e1);
    },
  );
});

describe("a watcher's worker killed while a call waits for a human", () => {
  it.skipIf(process.platform !== "linux")(
    "node --watch: the approved call is looked at again before it is written; the next worker's code gets it only with a new approval",
    async () => {
      const project = makeProject("A");
      cleanup.push(() => project.cleanup());
      const gw = rawGateway({
        // --hold-timeout: with the idle poll off, the next worker (started by the rebuild) is not
        // seen, and the epoch comes from the restart after half the hold timeout (7.5 s by default)
        args: [
          "--label",
          "inventory",
          "--approval",
          "per-call",
          "--hold-timeout",
          "8000",
          "--",
          NODE,
          "--watch",
          "dist/server.js",
        ],
        cwd: project.dir,
        // the idle poll turned off: only the look before the write can notice the worker gone
        env: { ...project.env, ...QUICK_STOP, PORTCULLIS_POLL_MS: "600000" },
      });
      await started(gw);
      const seen = new Set<string>();
      // a first call, approved, tells which worker reads the pipe
      const firstAnswer = gw.next((m) => m.id === "first", 30_000);
      gw.send({ jsonrpc: "2.0", id: "first", method: "tools/call", params: { name: "read_status" } });
      await decideByCli(gw.stateDir, "approve", (await nextStoredRequest(gw.stateDir, seen)).request);
      const first = answered(await firstAnswer);
      expect(first).toMatchObject({ revision: "A" });
      const e1 = await epochOf(gw.stateDir);
      // the call waits for a human; meanwhile the worker is killed (node --watch starts the next
      // one only at a change), and then the human approves it for epoch e1
      const waitingAnswer = gw.next((m) => m.id === "waiting", 60_000);
      gw.send({ jsonrpc: "2.0", id: "waiting", method: "tools/call", params: { name: "read_status" } });
      const asked = await nextStoredRequest(gw.stateDir, seen);
      expect(asked.executionEpoch).toBe(e1);
      await killWorker(first!.pid as number);
      await decideByCli(gw.stateDir, "approve", asked.request);
      // its intent under e1 is recorded as the approval lets it through; then it is held, or
      // (without the look before the write) written into the pipe nobody reads
      await waitFor(
        async () =>
          (await events(gw.stateDir)).some((e) => e.type === "tool_called" && e.requestId === "waiting"),
        15_000,
        "the approved call's intent",
      );
      // new code: node --watch starts it, and it would read what is in the pipe
      project.rebuild("C");
      let answer: WireMessage | null = null;
      void waitingAnswer.then((m) => {
        answer = m;
      });
      // the held call meets the new code's epoch: it was approved for e1 only, so it asks again
      const again = await waitForPending(
        gw.stateDir,
        (list) => (answer !== null ? "answered" : (list.find((q) => !seen.has(q.request)) ?? null)),
        30_000,
        "a new approval request (or an answer)",
        storedPending,
      );
      expect(answer, "the next worker answered a call approved for the killed one's epoch").toBeNull();
      expect(again).not.toBe("answered");
      const request = again as Pending;
      expect(request.executionEpoch).not.toBe(e1);
      await decideByCli(gw.stateDir, "approve", request.request);
      expect(answered(await waitingAnswer)).toMatchObject({ revision: "C" });
      // it was never sent under e1: its intent there was closed unsent
      const closed = (await events(gw.stateDir)).filter(
        (e) => e.type === "call_interrupted" && e.requestId === "waiting",
      );
      expect(closed).toEqual([expect.objectContaining({ epoch: e1, outcome: "not_forwarded" })]);
    },
    120_000,
  );
});

describe("a process that answered on the gateway's pipe gone, or only a helper", () => {
  it.skipIf(process.platform !== "linux")(
    "a helper that inherited only stdin (its output captured) exits: calls go on under the same epoch, nothing held",
    async () => {
      const dir = tempDir();
      cleanup.push(() => removeDir(dir));
      const gw = rawGateway({
        args: ["--label", "children", "--approval", "none", "--", NODE, FIXTURES.children],
        cwd: dir,
        env: { FIXTURE_HELPER_AT_INIT: "1", FIXTURE_HELPER_STDIN: "1" },
      });
      await started(gw);
      // the first answer settles the epoch while the helper runs, holding the gateway's pipe as stdin
      const server = (await callTool(gw, "whoami")).pid;
      const e1 = await epochOf(gw.stateDir);
      const helper = (await callTool(gw, "helper_stop")).stopped as number;
      expect(helper).toBeGreaterThan(0);
      await waitFor(() => !existsSync(`/proc/${helper}`), 10_000, "the helper to be gone");
      // each call looks at the settled processes before it is written: the helper is gone
      for (let i = 0; i < 3; i++) expect((await callTool(gw, "whoami")).pid).toBe(server);
      expect(await epochOf(gw.stateDir)).toBe(e1);
      expect(gw.stderr()).not.toMatch(/held the gateway's pipe|holding tools\/call/);
    },
  );

  it.skipIf(process.platform !== "linux")(
    "node --watch's worker killed and no next worker: the server is restarted, and the held call meets the new epoch",
    async () => {
      const project = makeProject("A");
      cleanup.push(() => project.cleanup());
      // the restart comes after half the hold timeout
      const gw = nodeWatchGateway(project, { holdTimeoutMs: 8000, env: QUICK_STOP });
      await started(gw);
      const first = await callTool(gw, "read_status");
      const e1 = await epochOf(gw.stateDir);
      await killWorker(first.pid as number);
      // node --watch starts its next worker only at a change, and none comes
      sendAfterKill(gw);
      // held for the reason that holds it (the code of the epoch unknown), not a catalog to verify
      await waitFor(
        () =>
          /holding tools\/call "read_status": process \d+, which held the gateway's pipe, went away/.test(
            gw.stderr(),
          ),
        15_000,
        "the gateway to hold the call",
      );
      expect(gw.stderr()).not.toMatch(/holding tools\/call "read_status" until the catalog/);
      const status = await runCli(["status", "--json"], { stateDir: gw.stateDir });
      const row = (JSON.parse(status.stdout) as { gateways: { state: string; epoch: string }[] })
        .gateways[0]!;
      if (row.epoch === e1) expect(row.state).toBe("identity-pending");
      const answer = answered(await gw.next((m) => m.id === "after-kill", 30_000));
      expect(answer).toMatchObject({ revision: "A" });
      expect(answer!.pid).not.toBe(first.pid);
      expect(await afterKillEpochs(gw.stateDir)).not.toContain(e1);
      expect(await epochOf(gw.stateDir, e1)).not.toBe(e1);
      // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
      await waitFor(
        () => /nothing took the place of the server's worker within 4 s/.test(gw.stderr()),
        20_000,
        "the gateway's line on the worker not replaced",
      );
      expect(gw.stderr()).toMatch(/nothing took the place of the server's worker within 4 s/);
    },
  );
});

describe("a watched file written and put back before the capture judged it (onChange restart)", () => {
  function pluginProject(): { dir: string; plugin: string; record: string; release: string } {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    mkdirSync(join(dir, "plugins"));
    const plugin = join(dir, "plugins", "once.mjs");
    writeFileSync(plugin, 'export default () => "once-A";\n');
    return { dir, plugin, record: join(dir, "calls.jsonl"), release: join(dir, "release") };
  }

  function gatewayFor(p: ReturnType<typeof pluginProject>): Gateway {
    return rawGateway({
      args: [
        "--label",
        "plugins",
        "--approval",
        "none",
        "--on-change",
        "restart",
        "--watch",
        "plugins/**",
        "--",
        NODE,
        FIXTURES.plugins,
      ],
      cwd: p.dir,
      env: { FIXTURE_RECORD: p.record, FIXTURE_RELEASE: p.release, PORTCULLIS_DEBUG: "1" },
    });
  }

  it("a call sent after the write waits for the verdict: the process of the old epoch never loads what was written", async () => {
    const p = pluginProject();
    const gw = gatewayFor(p);
    await started(gw);
    const e1Pid = (await callTool(gw, "whoami")).pid;
    const original = readFileSync(p.plugin);
    writeFileSync(p.plugin, 'export default () => "once-EVIL";\n');
    gw.send({ jsonrpc: "2.0", id: "during", method: "tools/call", params: { name: "plugin" } });
    await waitFor(
      () => /holding tools\/call "plugin"/.test(gw.stderr()) || gw.messages().some((m) => m.id === "during"),
      15_000,
      "the gateway to hold or answer the call",
    );
    writeFileSync(p.plugin, original); // put back, as it was
    const answer = answered(await gw.next((m) => m.id === "during", 30_000));
    expect(answer).not.toBeNull();
    // Either the change was judged as put back (the call then ran on the untouched process and
    // loaded the file as it is now), or it was judged a change and the call ran on a new epoch.
    if (answer!.out === "once-EVIL") expect(answer!.pid).not.toBe(e1Pid);
    // What the process keeps is what every later call of its epoch runs: never what was written.
    const later = await callTool(gw, "plugin");
    expect(later.out).toBe("once-A");
  });

  it("written through a hard link (no event), called and put back between two stat polls: the server is restarted all the same", async () => {
    const p = pluginProject();
    const outside = tempDir();
    cleanup.push(() => removeDir(outside));
    const gw = gatewayFor(p);
    await started(gw);
    const e1Pid = (await callTool(gw, "whoami")).pid;
    const e1 = await epochOf(gw.stateDir);
    // another name of the plugin in a directory nobody watches: writes through it raise no event
    const other = join(outside, "other-name.mjs");
    linkSync(p.plugin, other);
    const original = readFileSync(p.plugin);
    const rewrite = (bytes: string | Buffer) => {
      const fd = openSync(other, "r+");
      ftruncateSync(fd, 0);
      writeSync(fd, typeof bytes === "string" ? Buffer.from(bytes) : bytes, 0);
      closeSync(fd);
    };
    rewrite('export default () => "once-EVIL";\n');
    const during = await callTool(gw, "plugin"); // loads the file and keeps what it loaded
    rewrite(original);
    // the stat poll sees the change now, whichever came first: the capture compares equal
    await waitFor(
      () => /new execution epoch|plugins\/once\.mjs touched; content unchanged/.test(gw.stderr()),
      15_000,
      "the change to be judged",
    );
    if (during.pid === e1Pid) {
      // the old epoch's process ran the written code: that epoch must not serve on
      expect(gw.stderr()).toMatch(
        /plugins\/once\.mjs changed and was put back while a request was at the server/,
      );
    }
    expect(await epochOf(gw.stateDir, e1)).not.toBe(e1);
    const later = await callTool(gw, "plugin");
    expect(later.pid).not.toBe(e1Pid);
    expect(later.out).toBe("once-A");
  });

  it("a request at the server when the file changed: put back unchanged, the server is restarted all the same", async () => {
    const p = pluginProject();
    const gw = gatewayFor(p);
    await started(gw);
    const warm = await callTool(gw, "plugin");
    const e1 = await epochOf(gw.stateDir);
    gw.send({ jsonrpc: "2.0", id: "at-server", method: "tools/call", params: { name: "wait" } });
    await waitFor(
      () => readJsonLines<{ tool: string }>(p.record).some((r) => r.tool === "wait"),
      15_000,
      "the server to receive the call",
    );
    // the same bytes written again: a change event whose capture compares equal
    writeFileSync(p.plugin, readFileSync(p.plugin));
    await waitFor(
      () => /new execution epoch|plugins\/once\.mjs touched; content unchanged/.test(gw.stderr()),
      15_000,
      "the change to be judged",
    );
    expect(gw.stderr()).toMatch(
      /plugins\/once\.mjs changed and was put back while a request was at the server/,
    );
    expect(await epochOf(gw.stateDir, e1)).not.toBe(e1);
    writeFileSync(p.release, "");
    const after = await callTool(gw, "plugin");
    expect(after.pid).not.toBe(warm.pid);
  });
});
