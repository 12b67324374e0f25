// The watched files follow the file that runs when the command line names it indirectly: through
// a symlink (to the file, or to a directory on its path), or as a directory whose package.json
// "main" picks the file (`node .`). Real gateways, real servers, real file-system events.
import { mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { runCli, type Session, startInventory } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject, type Project, type Revision } from "../helpers/project.js";
import { gatewayRow } from "../helpers/status.js";

interface StatusRow {
  epoch: string;
  record: {
    identityDigest: string;
    entry: { path: string } | null;
    wrappers: { path: string }[];
  };
}

/**
 * `status --json`'s gateway; with `after`, once its row shows another epoch than that one. The row
 * is written as an epoch comes up, or, when the store was busy then, at the next heartbeat (5 s):
 * a server answering from the new build is no sign that status shows its epoch yet.
 */
async function status(stateDir: string, after?: string): Promise<StatusRow> {
  if (after !== undefined)
    await gatewayRow(stateDir, (r) => r.epoch !== after, `the row to show an epoch after ${after}`, 15_000);
  const r = await runCli(["status", "--json"], { stateDir });
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { gateways: StatusRow[] }).gateways[0]!;
}

async function revisionBecomes(gw: Session<Client>, revision: Revision): Promise<void> {
  await waitFor(
    async () => {
      const res = await gw.client.callTool({ name: "read_status", arguments: {} }).catch(() => null);
      if (res === null) return null;
      const text = (res.content as { text: string }[])[0]!.text;
      return (JSON.parse(text) as { revision: string }).revision === revision ? true : null;
    },
    15_000,
    `an answer from revision ${revision}`,
  );
}

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function start(project: Project, command: string[]) {
  const gw = await startInventory(project, ["--approval", "none", "--on-change", "restart"], { command });
  cleanup.push(
    () => gw.close(),
    () => project.cleanup(),
  );
  await gw.client.listTools();
  return gw;
}

/** `dir/server.js` built for `revision` from the project's own entry. */
function buildAt(project: Project, dir: string, revision: Revision): void {
  mkdirSync(join(project.dir, dir), { recursive: true });
  writeFileSync(
    join(project.dir, dir, "server.js"),
    readFileSync(project.entry, "utf8").replace(/"revision":"[ABC]"/, `"revision":"${revision}"`),
  );
}

const RESTARTED = /new execution epoch: .*; restart\)/;

describe("a symlinked entry", () => {
  it("restart: editing the file the link points to restarts the server onto the new code", async () => {
    const project = makeProject("A");
    symlinkSync("dist/server.js", join(project.dir, "link.js"));
    const gw = await start(project, [NODE, "link.js"]);
    await revisionBecomes(gw, "A");

    project.rebuild("B"); // dist/server.js: the link's target, in another directory
    await gw.waitForStderr(/build complete: dist\/server\.js changed/, 10_000);
    await gw.waitForStderr(RESTARTED, 15_000);
    await revisionBecomes(gw, "B");
  });

  it("restart: a directory link on the entry's path pointed at another build is noticed, and that build is watched", async () => {
    const project = makeProject("A");
    buildAt(project, "build2", "C");
    symlinkSync("dist", join(project.dir, "current"));
    const gw = await start(project, [NODE, "current/server.js"]);
    await revisionBecomes(gw, "A");
    const before = await status(gw.stateDir!);

    // how deploys switch releases: a new link renamed over the old one
    symlinkSync("build2", join(project.dir, "current.next"));
    renameSync(join(project.dir, "current.next"), join(project.dir, "current"));
    // the link's own change (inotify), and the entry through it when the one-second stat poll of
    // the server's files reports it within the same debounce (a loaded machine): both are true
    await gw.waitForStderr(/build complete: current(, current\/server\.js)? changed/, 10_000);
    await gw.waitForStderr(RESTARTED, 15_000);
    await revisionBecomes(gw, "C");
    expect((await status(gw.stateDir!, before.epoch)).record.identityDigest).not.toBe(
      before.record.identityDigest,
    );

    // the release now linked is the one watched
    const from = gw.stderr().length;
    buildAt(project, "build2", "B");
    await gw.waitForStderr(/build complete: .*build2\/server\.js.* changed/, 10_000, from);
    await gw.waitForStderr(RESTARTED, 15_000, from);
    await revisionBecomes(gw, "B");
  });
});

describe("node . with package.json main", () => {
  it("restart: main switched to another file is noticed, and the identity digest changes", async () => {
    const project = makeProject("A");
    buildAt(project, "dist2", "C");
    const pkgFile = join(project.dir, "package.json");
    const pkg = JSON.parse(readFileSync(pkgFile, "utf8")) as Record<string, unknown>;
    writeFileSync(pkgFile, JSON.stringify({ ...pkg, main: "dist/server.js" }));
    const gw = await start(project, [NODE, "."]);
    await revisionBecomes(gw, "A");
    const before = await status(gw.stateDir!);
    expect(before.record.entry!.path).toBe("dist/server.js");
    expect(before.record.wrappers.map((w) => w.path)).toContain("package.json");

    writeFileSync(pkgFile, JSON.stringify({ ...pkg, main: "dist2/server.js" }));
    await gw.waitForStderr(/build complete: package\.json changed/, 10_000);
    await gw.waitForStderr(RESTARTED, 15_000);
    await revisionBecomes(gw, "C");
    const after = await status(gw.stateDir!, before.epoch);
    expect(after.record.entry!.path).toBe("dist2/server.js");
    expect(after.record.identityDigest).not.toBe(before.record.identityDigest);
    expect(after.epoch).not.toBe(before.epoch);
  });
});
