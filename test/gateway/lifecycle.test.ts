// The supervisor's end states: a crash loop stops with a clear message (onChange disconnect) or
// waits for the next change of the server's files (report, restart: the edit-build loop),
// `onChange: disconnect` ends the client connection, and a rebuilt server that negotiates
// differently is not edited in place — the connection ends so the host re-initializes.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, expectRequestClosedWithRun } from "../helpers/approvals.js";
import { failingCatalogGateway } from "../helpers/failingCatalog.js";
import { readJsonLines, removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { FIXTURES, fixtureCommand, NODE } from "../helpers/paths.js";
import { makeProject, type Project, type Revision } from "../helpers/project.js";
import { type RawGateway, type RawPeer, rawGateway } from "../helpers/raw.js";
import { gatewayRow } from "../helpers/status.js";

interface StatusRow {
  epoch: string;
  state: string;
  paused: string | null;
}

/**
 * The gateway's row in `portcullis status --json`: for the case about status. Elsewhere the row
 * is read in the test process (gatewayRow): status is not what those cases are about.
 */
async function statusRow(stateDir: string): Promise<StatusRow> {
  const r = await runCli(["status", "--json"], { stateDir });
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { gateways: StatusRow[] }).gateways[0]!;
}

/**
 * A crash loop's respawns wait 20 ms, 40 ms, 80 ms… instead of 200 ms, 400 ms, 800 ms… (3 s for the
 * five crashes of a loop): what these tests prove is what happens at the loop's limit, not how long
 * the backoff is.
 */
const FAST_RESPAWN = { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" };

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * A raw gateway under `--on-change restart` in front of a revisioned project at `revision`, with
 * `extra` run flags (a long --hold-timeout makes only an answer given at once pass).
 */
function restartingInventory(revision: Revision, extra: string[] = []): { project: Project; gw: RawGateway } {
  const project = makeProject(revision);
  cleanup.push(() => project.cleanup());
  const gw: RawGateway = rawGateway({
    args: [
      "--label",
      "inventory",
      "--approval",
      "none",
      "--on-change",
      "restart",
      ...extra,
      "--",
      ...project.command,
    ],
    cwd: project.dir,
    env: { ...project.env, ...FAST_RESPAWN },
  });
  cleanup.push(() => gw.close());
  return { project, gw };
}

/** Saves a build of the project's entry that crashes at start. */
function breakBuild(project: Project): void {
  writeFileSync(project.entry, `${readFileSync(project.entry, "utf8")}\nthis is not javascript (;\n`);
}

/**
 * Rebuilds the project at revision C while supervision is paused and waits for the new epoch:
 * the audit's events once the new epoch's server_started (after `pausedEpoch`) is in it.
 */
async function rebuiltAfterPause(
  gw: RawGateway,
  project: Project,
  pausedEpoch: string,
): Promise<Awaited<ReturnType<typeof auditEvents>>> {
  const from = gw.stderr().length;
  project.rebuild("C");
  await waitFor(
    () => /new execution epoch: .*; restart\)/.test(gw.stderr().slice(from)),
    15_000,
    "a new epoch after the rebuild",
  );
  return waitFor(
    async () => {
      const all = await auditEvents(gw.stateDir);
      return all.some((e) => e.type === "server_started" && e.previousEpoch === pausedEpoch) ? all : null;
    },
    10_000,
    "the new epoch's server_started",
  );
}

/** A gateway under --on-change disconnect in front of the plugins fixture, listed; its plugin file. */
async function disconnectingPlugins(
  approval: "none" | "session",
): Promise<{ plugin: string; gw: RawGateway }> {
  const dir = tempDir("portcullis-disc-");
  cleanup.push(() => removeDir(dir));
  mkdirSync(join(dir, "plugins"));
  const plugin = join(dir, "plugins", "once.mjs");
  writeFileSync(plugin, 'export default () => "A";\n');
  const gw = rawGateway({
    args: [
      "--label",
      "plugins",
      "--approval",
      approval,
      "--on-change",
      "disconnect",
      "--watch",
      "plugins/**",
      "--",
      NODE,
      FIXTURES.plugins,
    ],
    cwd: dir,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  await gw.request("tools/list", {}, 10_000);
  return { plugin, gw };
}

/**
 * The client's initialize, sent again while it is answered epoch_transition: a server restarted as
 * it starts (a write of its own seen) may be gone before it answers, and the gateway then tells the
 * client to send it again (first-initialize-lost.test.ts). Bounded: a few restarts at most.
 */
async function initializeAcrossRestarts(gw: RawPeer): Promise<void> {
  let answer: Awaited<ReturnType<RawPeer["initialize"]>> | undefined;
  for (let attempt = 0; attempt < 6; attempt++) {
    answer = await gw.initialize(undefined, 30_000);
    if (answer.result !== undefined) return;
    if ((answer.error?.data as { error?: string } | undefined)?.error !== "epoch_transition") break;
  }
  throw new Error(
    `initialize not answered: ${JSON.stringify(answer)}; the gateway's stderr ends:\n${gw.stderr().slice(-4000)}`,
  );
}

/** A call of read_status until one is served (the server may still be coming up). */
function servedCall(gw: RawPeer, what: string) {
  return waitFor(
    async () => {
      const r = await gw.request("tools/call", { name: "read_status", arguments: {} }, 10_000);
      return r.result ? r : null;
    },
    15_000,
    what,
  );
}

describe("supervision end states", () => {
  it("onChange disconnect: a crash loop stops with one clear message and exit code 1; every request was answered", async () => {
    const starts = `${tempDir("portcullis-crash-")}/starts.jsonl`;
    const gw: RawGateway = rawGateway({
      args: [
        "--label",
        "crashy",
        "--approval",
        "none",
        "--on-change",
        "disconnect",
        "--",
        ...fixtureCommand("crashy"),
      ],
      env: { FIXTURE_STARTS: starts, ...FAST_RESPAWN },
    });
    cleanup.push(() => gw.close());
    gw.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    const exit = await gw.exited;
    expect(exit.code).toBe(1);
    expect(gw.stderr()).toMatch(/exited with code 1 5 times within 30 s; supervision stopped/);
    expect(readJsonLines(starts)).toHaveLength(5);
    // the initialize was not left hanging
    expect(gw.messages().some((m) => m.id === 1 && m.error)).toBe(true);
  });

  // One scenario for what a crash loop's pause looks like from each side (the client's refusals,
  // status, the audit) and for its end by a fixed build: both former cases started the same
  // gateway on the same project, broke the same build and waited for the same pause (a gateway,
  // its server, five crashes and the fixed server each), only to look at different things. The
  // looks read, never change, what the gateway does: the refused call is audited whoever looks.
  it("onChange restart: a build that crashes at start pauses supervision (refused at once, status says paused, refusals audited); the gateway stays, and the fix is an artifact_changed served under a new epoch", async () => {
    const { project, gw } = restartingInventory("B", ["--hold-timeout", "120000"]);
    let exited = false;
    void gw.exited.then(() => {
      exited = true;
    });
    await gw.initialize();
    expect((await gw.request("tools/list", {}, 10_000)).result).toBeDefined();
    const first = await gw.request("tools/call", { name: "read_status", arguments: {} }, 10_000);
    expect(JSON.parse(first.result.content[0].text).revision).toBe("B");
    const firstEpoch = (await gatewayRow(gw.stateDir, (r) => r.epoch !== null)).epoch;

    breakBuild(project);
    await waitFor(
      () =>
        /server keeps crashing \(exited with code 1 5 times within 30 s\).*waits for the next change/.test(
          gw.stderr(),
        ),
      30_000,
      "the pause line",
    );

    // status says paused, with its reason (its subject here: the command itself, once each way)
    const pausedRow = await gatewayRow(gw.stateDir, (r) => r.state === "paused", "the row to say paused");
    const paused = await statusRow(gw.stateDir);
    expect(paused).toMatchObject({ state: "paused", epoch: pausedRow.epoch });
    expect(paused.paused).toMatch(/keeps crashing.*next change of its files/);
    const text = await runCli(["status"], { stateDir: gw.stateDir });
    expect(text.stdout).toMatch(/^inventory {2}paused {2}/m);
    expect(text.stdout).toMatch(/^ {2}paused {5}the server keeps crashing/m);
    expect(text.stdout).toMatch(new RegExp(`epoch {6}${paused.epoch} {2}\\(the last one; .* is gone\\)`));

    // while paused, calls and lists are refused at once, saying what to do
    const call = await gw.request("tools/call", { name: "read_status", arguments: {} }, 10_000);
    expect(call.error).toMatchObject({
      code: -32603,
      message: expect.stringMatching(/^The server keeps crashing;/),
      data: {
        error: "server_unavailable",
        reason: expect.stringMatching(/keeps crashing.*next change of its files/),
        retry: expect.stringMatching(/fix the server/),
      },
    });
    const list = await gw.request("tools/list", {}, 10_000);
    expect(list.error?.data).toMatchObject({ error: "server_unavailable" });
    // a call refused during the pause is in the audit, as the guard's refusals are
    await waitFor(
      async () =>
        (await auditEvents(gw.stateDir)).some(
          (e) =>
            e.type === "authorization_denied" &&
            e.reason === "server_unavailable" &&
            e.tool === "read_status" &&
            e.epoch === paused.epoch,
        ),
      10_000,
      "the refused call's authorization_denied",
    );

    // the fix that resumes the server is recorded as any change is: its paths, then the new epoch
    const events = await rebuiltAfterPause(gw, project, paused.epoch);
    const changed = events.findIndex((e) => e.type === "artifact_changed" && e.epoch === paused.epoch);
    expect(changed).toBeGreaterThanOrEqual(0);
    expect(events[changed]!.paths).toEqual(expect.arrayContaining([expect.stringMatching(/server\.js$/)]));
    expect(events[changed]!.parts).toEqual(expect.arrayContaining([expect.stringMatching(/^entry /)]));
    const started = events.findIndex((e) => e.type === "server_started" && e.previousEpoch === paused.epoch);
    expect(changed).toBeLessThan(started);

    // the fixed build is served, under a new epoch, and the row leaves paused
    const served = await servedCall(gw, "a call served by the fixed build");
    expect(JSON.parse(served.result.content[0].text).revision).toBe("C");
    const after = await gatewayRow(
      gw.stateDir,
      (r) => r.state !== "paused" && r.epoch !== paused.epoch,
      "the row to leave paused, at a new epoch",
    );
    expect(after.paused).toBeNull();
    expect(after.epoch).not.toBe(firstEpoch);
    expect(gw.stderr()).not.toMatch(/supervision stopped/);
    expect(exited).toBe(false);
  });

  it("a change while paused that cannot be captured (the entry gone) is recorded with the change that then resumes the server, before its new epoch", async () => {
    const { project, gw } = restartingInventory("B", ["--hold-timeout", "120000"]);
    await gw.initialize();
    expect((await gw.request("tools/list", {}, 10_000)).result).toBeDefined();

    breakBuild(project);
    await waitFor(() => /supervision paused/.test(gw.stderr()), 30_000, "the pause line");
    const paused = await gatewayRow(gw.stateDir, (r) => r.state === "paused", "the row to say paused");
    const pausedEpoch = paused.epoch!;

    // a build caught half-written: the dependency is new, the entry not written yet. Its identity
    // cannot be captured: the capture for the report and the launch's fail, and supervision
    // pauses again (the server cannot be started); the change is not recorded yet
    const from = gw.stderr().length;
    rmSync(project.entry);
    project.changeDependency("fixture-dep 2.0.0");
    await waitFor(
      () => /the server cannot be started: .*supervision paused/.test(gw.stderr().slice(from)),
      15_000,
      "the pause of a server that cannot be started",
    );
    expect(gw.stderr().slice(from)).toMatch(/cannot read the server's identity after .* changed/);

    // the build completes: one artifact_changed names both changes, against the epoch that
    // crashed, before the new epoch's server_started
    const events = await rebuiltAfterPause(gw, project, pausedEpoch);
    const changes = events.filter((e) => e.type === "artifact_changed" && e.epoch === pausedEpoch);
    const paths = changes.flatMap((e) => e.paths as string[]);
    expect(paths).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/fixture-dep\/index\.js$/),
        expect.stringMatching(/server\.js$/),
      ]),
    );
    expect(changes.flatMap((e) => e.parts as string[])).toEqual(
      expect.arrayContaining([expect.stringMatching(/^entry /), expect.stringMatching(/^dependency tree /)]),
    );
    const started = events.findIndex((e) => e.type === "server_started" && e.previousEpoch === pausedEpoch);
    expect(events.lastIndexOf(changes.at(-1)!)).toBeLessThan(started);
    const served = await servedCall(gw, "a call served by the completed build");
    expect(JSON.parse(served.result.content[0].text).revision).toBe("C");
  });

  // Slow: the write comes after the launch window (2 s from the first answer; 0.5 s here, set by
  // PORTCULLIS_LAUNCH_WINDOW_MS so that the five starts wait 0.6 s each, not 2.1 s) measured from
  // the spawn (a loaded machine, a server with a long start): a window counted from the spawn had
  // closed before the write; the start is measured to its first answer.
  // At once: the first write lands, as the machine's load has it, before the capture read gen.json
  // (its ctime probe: the server is launched again, capture first), after the watcher was set up
  // (an event), or in between: under load that was the stretch nobody saw (only the serving line,
  // never a restart); the watcher's first look now compares gen.json with what the capture saw
  // (capture-to-watch.test.ts holds that stretch open on every run).
  // The two run side by side (each with its own directory, gateway and teardown): most of their
  // time is spent waiting, for the five starts and for the pause to hold.
  it.concurrent.for([
    ["at once", 0, {}],
    ["slowly", 600, { PORTCULLIS_LAUNCH_WINDOW_MS: "500" }],
  ] as [string, number, Record<string, string>][])(
    "onChange restart: a server that rewrites a watched file as it starts (%s) is restarted up to the loop limit, then paused (no restart loop)",
    { timeout: 90_000 },
    async ([_how, delayMs, env], { expect, onTestFinished }) => {
      const teardown: (() => Promise<void> | void)[] = [];
      onTestFinished(async () => {
        for (const c of teardown.reverse()) await c();
      });
      const dir = tempDir("portcullis-selfwrite-");
      // writes gen.json (watched) at every start, then serves as the echo fixture does
      writeFileSync(
        join(dir, "server.mjs"),
        `import { writeFileSync } from "node:fs";\nawait new Promise((r) => setTimeout(r, ${delayMs}));\nwriteFileSync(new URL("./gen.json", import.meta.url), JSON.stringify({ pid: process.pid }));\nawait import(${JSON.stringify(pathToFileURL(FIXTURES.echo).href)});\n`,
      );
      writeFileSync(join(dir, "gen.json"), "{}");
      const gw: RawGateway = rawGateway({
        args: [
          "--label",
          "selfwrite",
          "--approval",
          "none",
          "--on-change",
          "restart",
          "--watch",
          "gen.json",
          "--",
          NODE,
          "server.mjs",
        ],
        cwd: dir,
        env,
      });
      teardown.push(() => gw.close());
      let exited = false;
      void gw.exited.then(() => {
        exited = true;
      });
      // (its first process restarts itself as it starts: the client's initialize may be lost with it)
      await initializeAcrossRestarts(gw);
      await waitFor(
        () =>
          /the server's files keep changing as it starts \(5 restarts within 30 s.*supervision paused/.test(
            gw.stderr(),
          ),
        60_000,
        "the pause after the restarts",
      ).catch((e: Error) => {
        // what the gateway said, to tell a restart loop from a slow start
        throw new Error(`${e.message}; the gateway's stderr ends:\n${gw.stderr().slice(-4000)}`);
      });
      // nothing runs now, so nothing writes gen.json: the pause holds
      const restarts = (gw.stderr().match(/; restart\)/g) ?? []).length;
      expect(restarts).toBe(4);
      await sleep(3000);
      expect((gw.stderr().match(/; restart\)/g) ?? []).length).toBe(restarts);
      // (the row is written as the pause begins: waited for, bounded)
      expect(
        (await gatewayRow(gw.stateDir, (r) => r.state === "paused", "the row to say paused")).state,
      ).toBe("paused");
      // a call is told what the pause is: the files keep changing, not a crash (it never crashed)
      const call = await gw.request("tools/call", { name: "echo", arguments: { message: "x" } }, 10_000);
      expect(call.error).toMatchObject({
        code: -32603,
        message: expect.stringMatching(/^The server's files keep changing as it starts/),
        data: {
          error: "server_unavailable",
          reason: expect.stringMatching(/^the server's files keep changing as it starts/),
          retry: expect.stringMatching(/stop the server writing the files portcullis watches/),
        },
      });
      expect(call.error!.message).not.toMatch(/crash/);
      expect(exited).toBe(false);
    },
  );

  it("onChange restart: a developer saving twice in a row gets two restarts, not a pause", async () => {
    const { project, gw } = restartingInventory("A");
    await gw.initialize();
    expect((await gw.request("tools/list", {}, 10_000)).result).toBeDefined();
    const epochs = () => (gw.stderr().match(/new execution epoch: .*; restart\)/g) ?? []).length;
    project.rebuild("B");
    // (bounds for a hang, not a speed: the suite's start, when this runs, loads the machine most)
    const told = (e: Error): never => {
      throw new Error(`${e.message}; the gateway's stderr ends:\n${gw.stderr().slice(-4000)}`);
    };
    await waitFor(() => epochs() === 1, 30_000, "the first restart").catch(told);
    // The second save right after the first restart came up: inside its launch window. Not
    // before the new process has read its entry (its start line) though: the save truncates the
    // file, then writes it, and a process loading it in between loads an empty module and exits,
    // so the new code would come up by a respawn, not the restart this case is about.
    await waitFor(
      () => /\[revisioned\] revision=B pid=/.test(gw.stderr()),
      30_000,
      "the B build's start",
    ).catch(told);
    project.rebuild("C");
    await waitFor(() => epochs() === 2, 30_000, "the second restart").catch(told);
    const served = await servedCall(gw, "a call served by the second build");
    expect(JSON.parse(served.result.content[0].text).revision).toBe("C");
    expect(gw.stderr()).not.toMatch(/supervision paused/);
  }, 90_000);

  it("onChange disconnect: a rebuild ends the client connection so the host reconnects", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "none", "--on-change", "disconnect"]);
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    project.rebuild("B");
    const exit = await gw.exited;
    expect(exit.code).toBe(0);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () =>
        /build complete: dist\/server\.js changed/.test(gw.stderr()) &&
        /onChange: disconnect/.test(gw.stderr()),
      20_000,
      "the gateway's line on the disconnect",
    );
    expect(gw.stderr()).toMatch(/build complete: dist\/server\.js changed/);
    expect(gw.stderr()).toMatch(/onChange: disconnect/);
  });

  it("onChange disconnect: a call held while the change was judged is told the connection ends, not to wait", async () => {
    const { plugin, gw } = await disconnectingPlugins("none");
    // a stream of writes keeps the change being judged (the debounce waits up to 1 s for it to
    // settle), so the call sent meanwhile is held until the verdict: changed, the connection ends
    let n = 0;
    const writer = setInterval(() => writeFileSync(plugin, `export default () => "B${n++}";\n`), 40);
    cleanup.push(() => clearInterval(writer));
    await waitFor(() => n > 2, 10_000, "the first writes");
    gw.send({ jsonrpc: "2.0", id: "held", method: "tools/call", params: { name: "whoami", arguments: {} } });
    await waitFor(
      () => /holding tools\/call "whoami": a file of the server's code changed/.test(gw.stderr()),
      10_000,
      "the call to be held while the change is judged",
    );
    clearInterval(writer);
    expect((await gw.exited).code).toBe(0);
    const answer = gw.messages().find((m) => m.id === "held" && m.method === undefined);
    expect(answer?.error).toMatchObject({
      code: -32053,
      data: {
        error: "identity_pending",
        reason:
          "the server changed on disk (onChange: disconnect); ending the connection so the client reconnects",
        retry: "reconnect, list tools again, then retry",
      },
    });
    expect(answer?.error?.message).toMatch(/ended the connection/);
    expect(JSON.stringify(answer)).not.toMatch(/being compared|wait a moment/);
  });

  it("onChange disconnect: a call waiting for a human is refused before the connection ends, and its request closed with the run", async () => {
    const { plugin, gw } = await disconnectingPlugins("session");
    gw.send({ jsonrpc: "2.0", id: "waits", method: "tools/call", params: { name: "whoami", arguments: {} } });
    await waitFor(() => /approval needed for "whoami"/.test(gw.stderr()), 10_000, "the approval request");
    // nobody approves; the server's code changes: the gateway ends the connection
    writeFileSync(plugin, 'export default () => "B";\n');
    expect((await gw.exited).code).toBe(0);
    const answer = gw.messages().find((m) => m.id === "waits" && m.method === undefined);
    expect(answer?.error).toMatchObject({ code: -32050, data: { error: "authorization_required" } });
    // the run's end closes the request, as when the client closes its input
    await expectRequestClosedWithRun(gw.stateDir);
  });

  it("a restarted server that negotiates different capabilities ends the connection instead of editing it", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "none", "--on-change", "restart"]);
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    project.rebuild("A", { resources: true }); // same tools, a new capability
    const exit = await gw.exited;
    expect(exit.code).toBe(0);
    expect(gw.stderr()).toMatch(/negotiated a different protocol version or capabilities/);
  });
});

describe("a catalog that cannot be fetched", () => {
  it("lists and calls are answered catalog_unavailable at once, never after the hold timeout; a later list fetches again", async () => {
    // a hold timeout far past what the test waits for an answer: only an answer given at once passes
    const { gw, failing } = failingCatalogGateway(cleanup);
    await gw.initialize();
    const list = await gw.request("tools/list", {}, 10_000);
    expect(list.error).toMatchObject({
      code: -32603,
      data: { error: "catalog_unavailable", catalogError: expect.stringMatching(/tools unavailable/) },
    });
    expect(list.error!.message).not.toMatch(/being fetched/);
    const call = await gw.request("tools/call", { name: "echo", arguments: {} }, 10_000);
    expect(call.error?.data).toMatchObject({ error: "catalog_unavailable" });
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /cannot fetch the tool catalog: .*tools unavailable/.test(gw.stderr()),
      20_000,
      "the gateway's line on the failed catalog",
    );
    expect(gw.stderr()).toMatch(/cannot fetch the tool catalog: .*tools unavailable/);
    // the gateway never fetches on its own in a loop: one fetch at most per request, plus its first
    const fetches = () => readFileSync(`${failing}.count`, "utf8").split("\n").filter(Boolean).length;
    expect(fetches()).toBeLessThanOrEqual(3);

    // the server is fixed: a later list fetches again (answered at once with the failure until then)
    rmSync(failing);
    const healed = await waitFor(
      async () => {
        const r = await gw.request("tools/list", {}, 10_000);
        if (r.result) return r;
        expect(r.error?.data).toMatchObject({ error: "catalog_unavailable" });
        await sleep(200);
        return undefined;
      },
      10_000,
      "a tools/list served once the server lists again",
    );
    expect(healed.result.tools.map((t: { name: string }) => t.name)).toEqual(["echo"]);
    const served = await gw.request("tools/call", { name: "echo", arguments: {} }, 10_000);
    expect(served.result).toBeDefined();
  });

  it("a fetch still under way at the hold timeout: identity_pending, worded for a first epoch", async () => {
    const gw: RawGateway = rawGateway({
      args: [
        "--label",
        "slow",
        "--approval",
        "none",
        "--hold-timeout",
        "300",
        "--",
        ...fixtureCommand("lenient"),
      ],
      env: { FIXTURE_LIST_DELAY_MS: "60000" },
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    const list = await gw.request("tools/list", {}, 10_000);
    expect(list.error).toMatchObject({ code: -32053, data: { error: "identity_pending" } });
    // nothing came before this epoch: no "changed", no "new"
    expect(JSON.stringify(list.error)).not.toMatch(/changed|new execution epoch/);
    expect(list.error!.message).toMatch(/still being fetched/);
    // the epoch whose catalog is awaited, as the gateway's serving line named it
    const epoch = /serving .* epoch=(\w+)/.exec(gw.stderr())?.[1];
    expect(epoch).toMatch(/^[0-9A-Z]{26}$/);
    expect(list.error!.data).toMatchObject({ currentEpoch: epoch });
  });
});

describe("a server that closes its own stdout or stdin but keeps running", () => {
  /** A raw gateway in front of crashy serving with FIXTURE_CLOSE=`close`; its starts counted. */
  function closingGateway(close: string, extra: string[] = []): { gw: RawGateway; starts: () => number } {
    const starts = `${tempDir("portcullis-pipes-")}/starts.jsonl`;
    const gw: RawGateway = rawGateway({
      args: ["--label", "pipes", "--approval", "none", ...extra, "--", ...fixtureCommand("crashy")],
      env: { FIXTURE_CLOSE: close, FIXTURE_STARTS: starts, ...FAST_RESPAWN },
    });
    cleanup.push(() => gw.close());
    return { gw, starts: () => readJsonLines(starts).length };
  }

  /** A noop call until one is served (the respawned server may still be coming up); its server's pid. */
  async function servedPid(gw: RawPeer): Promise<string> {
    const served = await waitFor(
      async () => {
        const r = await gw.request("tools/call", { name: "noop", arguments: {} }, 10_000);
        return r.result ? r : null;
      },
      15_000,
      "a call served by the respawned server",
    );
    return served.result.content[0].text as string;
  }

  /** The audit's server_exited events. */
  async function exits(stateDir: string): Promise<Record<string, unknown>[]> {
    return (await auditEvents(stateDir)).filter((e) => e.type === "server_exited");
  }

  it("stdout closed: the epoch ends as on a crash, its call is answered, and a respawned server serves", async () => {
    const { gw, starts } = closingGateway("on-call");
    await gw.initialize();
    expect((await gw.request("tools/list", {}, 10_000)).result).toBeDefined();
    const first = await servedPid(gw);
    const lost = await gw.request("tools/call", { name: "close_stdout", arguments: {} }, 10_000);
    expect(lost.error).toMatchObject({ data: { error: "epoch_transition" } });
    // the gateway's stderr and the answer travel on different pipes: wait for the line
    await waitFor(
      () => /server closed its stdout while still running: it can no longer serve/.test(gw.stderr()),
      10_000,
      "the line saying the server closed its stdout",
    );
    expect(await servedPid(gw)).not.toBe(first);
    expect(starts()).toBe(2);
    const exited = await waitFor(async () => (await exits(gw.stateDir))[0], 10_000, "server_exited");
    expect(exited).toMatchObject({ why: "exit", detail: "closed its stdout while still running" });
  });

  it("stdin closed: the next write fails, both calls waiting on it are answered, and a respawned server serves", async () => {
    const { gw, starts } = closingGateway("on-call");
    await gw.initialize();
    expect((await gw.request("tools/list", {}, 10_000)).result).toBeDefined();
    const first = await servedPid(gw);
    gw.send({
      jsonrpc: "2.0",
      id: "close",
      method: "tools/call",
      params: { name: "close_stdin", arguments: {} },
    });
    await waitFor(() => /closed its stdin, still running/.test(gw.stderr()), 10_000, "the fixture's close");
    // written to a pipe nobody reads: EPIPE
    const next = await gw.request("tools/call", { name: "noop", arguments: {} }, 10_000);
    expect(next.error).toMatchObject({ data: { error: "epoch_transition" } });
    const closing = await gw.next((m) => m.id === "close");
    expect(closing.error).toMatchObject({ data: { error: "epoch_transition" } });
    // (stderr and the answers travel on different pipes: waited for, not read at once)
    await waitFor(
      () => /server closed its stdin \(EPIPE\) while still running/.test(gw.stderr()),
      10_000,
      "the line saying the server closed its stdin",
    );
    expect(await servedPid(gw)).not.toBe(first);
    expect(starts()).toBe(2);
  });

  it("a server that closes its stdout at every start is a crash loop: supervision stops, no restart for ever", async () => {
    const { gw, starts } = closingGateway("stdout", ["--on-change", "disconnect"]);
    gw.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    await gw.next((m) => m.id === 1);
    gw.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const exit = await gw.exited;
    expect(exit.code).toBe(1);
    expect(gw.stderr()).toMatch(
      /closed its stdout while still running 5 times within 30 s; supervision stopped/,
    );
    expect(starts()).toBe(5);
  });
});
