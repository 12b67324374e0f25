// A server in an npm workspaces monorepo loads a sibling package through a node_modules symlink
// (node_modules/@acme/core -> ../../packages/core). Rebuilding that package changes the code the
// server runs: the gateway must see it like a rebuild of the server itself. Real gateways, real
// servers, real file-system events.
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import type { Revision } from "../helpers/project.js";
import { gatewayRow } from "../helpers/status.js";

interface StatusRow {
  epoch: string;
  record: {
    identityDigest: string;
    dependencyTree: { root: string; more?: { path: string; kind: string }[] } | null;
  };
}

/**
 * `status --json`'s gateway; with `after`, once its row shows another epoch than that one. The row
 * is written as an epoch comes up, or, when the store was busy then, at the next heartbeat (5 s):
 * a server answering from the new code is no sign that status shows its epoch yet.
 */
async function status(stateDir: string, after?: string): Promise<StatusRow> {
  if (after !== undefined)
    await gatewayRow(stateDir, (r) => r.epoch !== after, `the row to show an epoch after ${after}`, 15_000);
  const r = await runCli(["status", "--json"], { stateDir });
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { gateways: StatusRow[] }).gateways[0]!;
}

function put(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

/**
 * <root>/package.json (workspaces), package-lock.json, node_modules/@acme/{core,server} as links
 * to packages/*, packages/core/dist/index.js exporting the revision, packages/server/dist/server.js
 * importing @acme/core and running the revisioned fixture with that revision.
 */
function monorepo(revision: Revision) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "portcullis-monorepo-")));
  put(
    join(root, "package.json"),
    JSON.stringify({ name: "acme", private: true, workspaces: ["packages/*"] }),
  );
  put(join(root, "package-lock.json"), JSON.stringify({ name: "acme", lockfileVersion: 3 }));
  mkdirSync(join(root, "node_modules/@acme"), { recursive: true });
  symlinkSync("../../packages/core", join(root, "node_modules/@acme/core"));
  symlinkSync("../../packages/server", join(root, "node_modules/@acme/server"));
  const core = join(root, "packages/core");
  put(
    join(core, "package.json"),
    JSON.stringify({ name: "@acme/core", type: "module", main: "dist/index.js" }),
  );
  const buildCore = (rev: Revision) =>
    put(join(core, "dist/index.js"), `export const revision = ${JSON.stringify(rev)};\n`);
  buildCore(revision);
  const server = join(root, "packages/server");
  put(join(server, "package.json"), JSON.stringify({ name: "@acme/server", type: "module" }));
  put(
    join(server, "dist/server.js"),
    [
      `import { revision } from "@acme/core";`,
      `import { runRevisioned } from ${JSON.stringify(pathToFileURL(FIXTURES.revisioned).href)};`,
      "await runRevisioned({ revision });",
      "",
    ].join("\n"),
  );
  return { root, core, server, buildCore };
}

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function start(repo: ReturnType<typeof monorepo>, onChange: "report" | "restart") {
  const gw = await startGateway({
    args: [
      "--label",
      "inventory",
      "--approval",
      "none",
      "--on-change",
      onChange,
      "--",
      NODE,
      "dist/server.js",
    ],
    cwd: repo.server,
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(repo.root),
  );
  await gw.client.listTools();
  return gw;
}

async function revisionOf(gw: Session<Client>): Promise<string> {
  const res = await gw.client.callTool({ name: "read_status", arguments: {} });
  return (JSON.parse((res.content as { text: string }[])[0]!.text) as { revision: string }).revision;
}

const CORE_BUILT = /build complete: .*packages\/core\/dist\/index\.js.* changed/;

describe("a workspace package linked into node_modules", () => {
  it("report: rebuilding it is a completed build, and the record names the package", async () => {
    const repo = monorepo("A");
    const gw = await start(repo, "report");
    expect(await revisionOf(gw)).toBe("A");
    const before = await status(gw.stateDir!);
    expect(before.record.dependencyTree!.more).toContainEqual(
      expect.objectContaining({ path: repo.core, kind: "package" }),
    );

    repo.buildCore("B");
    await gw.waitForStderr(CORE_BUILT, 10_000);
    await gw.waitForStderr(/running server unchanged: pid=\d+ epoch=\S+/, 10_000);
    expect(await revisionOf(gw)).toBe("A"); // report: the old process keeps answering
  });

  it("restart: rebuilding it restarts the server onto the new code, with another identity digest", async () => {
    const repo = monorepo("A");
    const gw = await start(repo, "restart");
    expect(await revisionOf(gw)).toBe("A");
    const before = await status(gw.stateDir!);

    repo.buildCore("B");
    await gw.waitForStderr(CORE_BUILT, 10_000);
    await gw.waitForStderr(/new execution epoch: .*; restart\)/, 15_000);
    await waitFor(
      async () => ((await revisionOf(gw).catch(() => null)) === "B" ? true : null),
      15_000,
      "an answer from revision B",
    );
    const after = await status(gw.stateDir!, before.epoch);
    expect(after.epoch).not.toBe(before.epoch);
    expect(after.record.identityDigest).not.toBe(before.record.identityDigest);
  });
});
