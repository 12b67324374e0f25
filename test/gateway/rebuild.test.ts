import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { childrenOf, waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway, startInventory } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject, type Project, type Revision } from "../helpers/project.js";
import { gatewayRow } from "../helpers/status.js";

interface StatusRow {
  serverLabel: string;
  epoch: string;
  state: string;
  record: {
    epoch: string;
    identityDigest: string;
    entry: { path: string; sha256: string } | null;
    dependencyTree: { sha256: string; files: number } | null;
    processes: { pid: number }[];
    processId: number;
  };
  status: { line: string }[];
}

/**
 * `status --json`'s gateways; with `after`, once the row shows another epoch than that one. The
 * row is written as an epoch comes up, or, when the store was busy then, at the next heartbeat
 * (5 s): a server answering from the new code is no sign that status shows its epoch yet.
 */
async function status(stateDir: string, after?: string): Promise<StatusRow[]> {
  if (after !== undefined)
    await gatewayRow(stateDir, (r) => r.epoch !== after, `the row to show an epoch after ${after}`, 15_000);
  const r = await runCli(["status", "--json"], { stateDir });
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { gateways: StatusRow[] }).gateways;
}

async function readStatus(
  gw: Session<Client>,
): Promise<{ revision: string; pid: number; dependency: string }> {
  const res = await gw.client.callTool({ name: "read_status", arguments: {} });
  const text = (res.content as { type: string; text: string }[])[0]!.text;
  return JSON.parse(text);
}

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function start(project: Project, extra: string[] = [], command: string[] = project.command) {
  const gw = await startInventory(project, ["--approval", "none", ...extra], { command, credentials: true });
  cleanup.push(
    () => gw.close(),
    () => project.cleanup(),
  );
  await gw.client.listTools();
  return gw;
}

describe("rebuilds at the supervision layer", () => {
  it("report: the build succeeds but the old process keeps running — status lines, same epoch, old answers", async () => {
    const project = makeProject("A");
    const gw = await start(project);
    const before = await readStatus(gw);
    expect(before.revision).toBe("A");
    // the row says ready as the catalog is verified, or at the next heartbeat when the store was
    // busy then: an answer is no sign that it was written yet
    await gatewayRow(gw.stateDir!, (r) => r.state === "ready", "the row to say ready", 15_000).catch(
      () => null,
    );
    const [row] = await status(gw.stateDir!);
    const epoch = row!.epoch;
    expect(row!.state).toBe("ready");
    // the record names the processes that answered (settled after the first answer)
    expect(row!.record.processes.map((p) => p.pid)).toContain(before.pid);

    project.rebuild("B");
    await gw.waitForStderr(/^portcullis\[inventory\]: build complete: dist\/server\.js changed$/m, 10_000);
    const line = await gw.waitForStderr(
      /^portcullis\[inventory\]: running server unchanged: pid=\d+ epoch=\S+; /m,
      10_000,
    );
    // and what to do for the new code to run, since onChange report keeps the old one
    expect(line).toMatch(
      /; the new code runs when the server starts again: have your MCP client reconnect it, or give run --on-change restart \(in a host's entry: in its args, before the "--"\)$/,
    );
    expect(line).toContain(`epoch=${epoch}`);
    expect(line).toContain(`pid=${row!.record.processes[0]?.pid ?? ""}`);

    const after = await readStatus(gw);
    expect(after.revision).toBe("A");
    expect(after.pid).toBe(before.pid);
    const [row2] = await status(gw.stateDir!);
    expect(row2!.epoch).toBe(epoch);
    expect(row2!.status.map((s) => s.line)).toContain(line.trim().replace("portcullis[inventory]: ", ""));
  });

  it("restart with an identical tool list: a new epoch all the same, same catalog revision", async () => {
    const project = makeProject("B");
    const gw = await start(project, ["--on-change", "restart"]);
    const first = await readStatus(gw);
    const [row] = await status(gw.stateDir!);
    const revisionsBefore = await runCli(["catalog", "list", "inventory", "--json"], {
      stateDir: gw.stateDir,
    });

    project.rebuild("C"); // byte-identical tool list, different handler
    await gw.waitForStderr(/new execution epoch: pid=\d+ epoch=\S+ \(was \S+; restart\)/, 15_000);
    const after = await waitFor(
      async () => {
        const r = await readStatus(gw).catch(() => null);
        return r && r.revision === "C" ? r : null;
      },
      15_000,
      "an answer from revision C",
    );
    expect(after.pid).not.toBe(first.pid);
    const [row2] = await status(gw.stateDir!, row!.epoch);
    expect(row2!.epoch).not.toBe(row!.epoch);
    expect(row2!.record.identityDigest).not.toBe(row!.record.identityDigest);
    const revisionsAfter = await runCli(["catalog", "list", "inventory", "--json"], {
      stateDir: gw.stateDir,
    });
    expect(JSON.parse(revisionsAfter.stdout).revisions).toEqual(JSON.parse(revisionsBefore.stdout).revisions);
    // no list_changed was needed: the catalog did not change
    expect(gw.notifications("notifications/tools/list_changed")).toHaveLength(0);
  });

  it("a build that rewrites node_modules with the same bytes: the line and artifact_changed name only the entry", async () => {
    const project = makeProject("A");
    const gw = await start(project);
    const [row] = await status(gw.stateDir!);
    // one burst, as a build with an install step writes it: the entry changes, the dependency's
    // files are written again with the bytes they had
    const dependency = readFileSync(project.dependencyFile);
    const manifest = join(project.dependencyFile, "..", "package.json");
    const manifestBytes = readFileSync(manifest);
    project.rebuild("B");
    writeFileSync(project.dependencyFile, dependency);
    writeFileSync(manifest, manifestBytes);
    const line = await gw.waitForStderr(/^portcullis\[inventory\]: build complete: .* changed$/m, 10_000);
    expect(line.trim()).toBe("portcullis[inventory]: build complete: dist/server.js changed");
    const changed = await waitFor(
      async () =>
        (await auditEvents(gw.stateDir!)).find(
          (e) => e.type === "artifact_changed" && e.epoch === row!.epoch,
        ) ?? null,
      10_000,
      "artifact_changed",
    );
    expect(changed.paths).toEqual(["dist/server.js"]);
    expect(changed.parts).toEqual([expect.stringMatching(/^entry /)]);
  });

  it("the entry stays fixed while the resolved dependency tree changes: reported, and a new identity", async () => {
    const project = makeProject("A");
    const gw = await start(project);
    const [row] = await status(gw.stateDir!);
    project.changeDependency("fixture-dep 2.0.0 (patched)");
    await gw.waitForStderr(
      /^portcullis\[inventory\]: build complete: .*node_modules\/fixture-dep\/index\.js.* changed$/m,
      10_000,
    );
    await gw.waitForStderr(/^portcullis\[inventory\]: running server unchanged: /m, 10_000);
    expect((await readStatus(gw)).dependency).toBe("fixture-dep 1.0.0");

    // restart to see the identity the new tree gives: same entry digest, different tree and identity
    const gw2 = await startGateway({
      args: ["--label", "inventory", "--approval", "none", "--", ...project.command],
      cwd: project.dir,
      env: project.env,
      stateDir: gw.stateDir,
    });
    cleanup.push(() => gw2.close());
    await gw2.client.listTools();
    const rows = await status(gw.stateDir!);
    const row2 = rows.find((r) => r.epoch !== row!.epoch)!;
    expect(row2.record.entry!.sha256).toBe(row!.record.entry!.sha256);
    expect(row2.record.dependencyTree!.sha256).not.toBe(row!.record.dependencyTree!.sha256);
    expect(row2.record.identityDigest).not.toBe(row!.record.identityDigest);
    expect((await readStatus(gw2)).dependency).toBe("fixture-dep 2.0.0 (patched)");
  });

  it("a watcher replaces its child behind the same pipe: a new epoch before the next forwarded call", async () => {
    const project = makeProject("B");
    // the idle poll is pushed out of the way: detection must happen on the forwarding path
    const gw = await startGateway({
      args: ["--label", "inventory", "--approval", "none", "--", NODE, "--watch", "dist/server.js"],
      cwd: project.dir,
      env: { ...project.env, PORTCULLIS_POLL_MS: "600000" },
    });
    cleanup.push(
      () => gw.close(),
      () => project.cleanup(),
    );
    await gw.client.listTools();
    const first = await readStatus(gw);
    const [row] = await status(gw.stateDir!);
    const root = row!.record.processId;
    const children = () => childrenOf(root);
    const before = children();
    expect(before).toContain(String(first.pid));
    project.rebuild("C"); // same tool list: the client need not re-list, but the code changed
    await waitFor(
      () => {
        const now = children();
        return now !== "" && now !== before;
      },
      15_000,
      "node --watch to start a new child",
    );
    const after = await readStatus(gw);
    expect(after.revision).toBe("C");
    expect(after.pid).not.toBe(first.pid);
    await gw.waitForStderr(
      /running server replaced: process \d+ was replaced by process \d+, a new worker of watcher process \d+, under the process the gateway launched \(pid=\d+\); epoch=\w+ ended/,
      5_000,
    );
    // The watcher's own replacement follows the rebuild: never reported as "unchanged" first.
    expect(gw.stderr()).not.toMatch(/running server unchanged/);
    const [row2] = await status(gw.stateDir!);
    expect(row2!.epoch).not.toBe(row!.epoch);
  });
});

describe("crashes", () => {
  it("a crash mid-call is an epoch_transition, and the respawned server gets a new epoch", async () => {
    const project = makeProject("A");
    const gw = await start(project);
    const first = await readStatus(gw);
    const [row] = await status(gw.stateDir!);
    await expect(gw.client.callTool({ name: "crash_now", arguments: {} })).rejects.toMatchObject({
      code: -32054,
      data: { error: "epoch_transition", retried: false, requestEpoch: row!.epoch },
    });
    await gw.waitForStderr(/new execution epoch: .*respawn/, 10_000);
    const after = await waitFor(() => readStatus(gw).catch(() => null), 10_000, "the respawned server");
    expect(after.pid).not.toBe(first.pid);
    const [row2] = await status(gw.stateDir!, row!.epoch);
    expect(row2!.epoch).not.toBe(row!.epoch);
  });
});

/**
 * A second build beside dist/server.js, dist/other.js (revision `revision`), and a way to point
 * the project's wrapper at it: the launch command stays `scripts/start.sh`, the code it runs
 * changes.
 */
function secondEntry(project: Project, revision: Revision) {
  const path = join(project.dir, "dist", "other.js");
  const build = (rev: Revision) =>
    writeFileSync(
      path,
      readFileSync(project.entry, "utf8").replace(/"revision":"[ABC]"/, `"revision":"${rev}"`),
    );
  build(revision);
  return {
    build,
    retargetWrapper: () =>
      writeFileSync(
        project.wrapper,
        readFileSync(project.wrapper, "utf8").replace("dist/server.js", "dist/other.js"),
      ),
  };
}

async function revisionBecomes(gw: Session<Client>, revision: Revision) {
  return waitFor(
    async () => {
      const r = await readStatus(gw).catch(() => null);
      return r && r.revision === revision ? r : null;
    },
    15_000,
    `an answer from revision ${revision}`,
  );
}

describe("the watched files follow the code that runs", () => {
  it("restart: once the wrapper runs another entry, that entry's edits restart the server and the old entry's do not", async () => {
    const project = makeProject("B");
    const other = secondEntry(project, "C");
    const gw = await start(project, ["--on-change", "restart"], [project.wrapper]);
    expect((await readStatus(gw)).revision).toBe("B");
    const before = await gatewayRow(gw.stateDir!, (r) => r.epoch !== null, "the row to show B's epoch");

    other.retargetWrapper();
    await gw.waitForStderr(/build complete: scripts\/start\.sh changed/, 10_000);
    await gw.waitForStderr(/new execution epoch: .*; restart\)/, 15_000);
    await revisionBecomes(gw, "C");
    const [row] = await status(gw.stateDir!, before.epoch!);
    expect(row!.record.entry!.path).toBe("dist/other.js");

    // The entry that no longer runs is edited first, then the one that runs now.
    const from = gw.stderr().length;
    project.rebuild("A");
    other.build("A");
    await gw.waitForStderr(/build complete: dist\/other\.js changed/, 10_000, from);
    await gw.waitForStderr(/new execution epoch: .*; restart\)/, 15_000, from);
    await revisionBecomes(gw, "A");
    expect(gw.stderr().slice(from)).not.toMatch(/dist\/server\.js/);
  });

  it("report: after a crash respawn runs the wrapper's new target, its edits are reported and the old entry's are not", async () => {
    const project = makeProject("B");
    const other = secondEntry(project, "C");
    const gw = await start(project, [], [project.wrapper]);

    other.retargetWrapper();
    await gw.waitForStderr(/build complete: scripts\/start\.sh changed/, 10_000);
    await gw.waitForStderr(/running server unchanged: /, 10_000);
    expect((await readStatus(gw)).revision).toBe("B");
    await expect(gw.client.callTool({ name: "crash_now", arguments: {} })).rejects.toMatchObject({
      data: { error: "epoch_transition" },
    });
    await gw.waitForStderr(/new execution epoch: .*; respawn\)/, 10_000);
    await revisionBecomes(gw, "C");

    const from = gw.stderr().length;
    project.rebuild("A");
    other.build("A");
    await gw.waitForStderr(/build complete: dist\/other\.js changed/, 10_000, from);
    await gw.waitForStderr(/running server unchanged: /, 10_000, from);
    expect(gw.stderr().slice(from)).not.toMatch(/dist\/server\.js/);
    expect((await readStatus(gw)).revision).toBe("C");
  });
});
