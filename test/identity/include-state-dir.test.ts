// An identity.include pattern that reaches portcullis's own state directory (`../**` with the
// state directory next to the project, or a link to it among the plugins): the store, its -wal
// and -shm, the keyring are never the server's code. Left out of the identity and the watcher,
// said once; otherwise each write of the gateway's own audit log was a change of the server's
// code, and under `onChange: restart` a restart after every call. Real gateways, real files.
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { captureStaticIdentity, DigestCache, setStateDir } from "../../src/identity/index.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";
import { gatewayRow } from "../helpers/status.js";
import { makeProject as makeBareProject, put, specFor } from "./fixtures.js";

type Gateway = Awaited<ReturnType<typeof startGateway>>;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The gateway of the project in `dir` with `include`, onChange restart, its state in `stateDir`. */
async function startWithInclude(dir: string, stateDir: string, include: string[]): Promise<Gateway> {
  const config = {
    servers: {
      inventory: {
        command: NODE,
        args: ["dist/server.js"],
        cwd: ".",
        identity: { include },
        onChange: "restart",
        approval: { default: "none" },
      },
    },
  };
  put(dir, "portcullis.json", JSON.stringify(config, null, 2));
  const gw = await startGateway({ args: ["inventory"], cwd: dir, stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

async function statusOf(gw: Gateway): Promise<{ epoch: string; files: number }> {
  const status = JSON.parse((await runCli(["status", "--json"], { stateDir: gw.stateDir })).stdout) as {
    gateways: { epoch: string; record: { identityInputs: { files: number } } }[];
  };
  return { epoch: status.gateways[0]!.epoch, files: status.gateways[0]!.record.identityInputs.files };
}

/** Calls that each write the audit log (and the store's -wal), then a change of a real plugin. */
async function callsThenPluginChange(gw: Gateway, stateDir: string, plugin: string): Promise<void> {
  const first = await statusOf(gw);
  for (let i = 0; i < 5; i++) {
    await gw.client.callTool({ name: "read_status", arguments: {} });
    await gw.client.callTool({
      name: "adjust_inventory",
      arguments: { sku: `S-${i}`, warehouse: "W", delta: 1 },
    });
    await gw.client.listTools();
  }
  // still the epoch of the start: the store's writes were no change of the server's code
  expect((await statusOf(gw)).epoch).toBe(first.epoch);

  // a real file under the same pattern still is
  writeFileSync(plugin, "export default 'plugin 2';\n");
  const line = await gw.waitForStderr(/build complete: .* changed/, 15_000);
  expect(line).toContain("plugin.js");
  await gw.waitForStderr(/new execution epoch: .*restart/, 15_000);
  // the row is written as the epoch comes up, or at the next heartbeat when the store was busy:
  // status may show the epoch before for a moment after the line
  await gatewayRow(stateDir, (r) => r.epoch !== first.epoch, "the row to show the plugin's epoch", 15_000);
  expect((await statusOf(gw)).epoch).not.toBe(first.epoch);

  const err = gw.stderr();
  expect(err).not.toMatch(/portcullis\.db/);
  expect(err).not.toContain("changed while the server was starting");
  // the plugin's change, and nothing before it
  expect(err.match(/new execution epoch/g)?.length).toBe(1);
  const verify = await runCli(["audit", "verify", "--state-dir", stateDir]);
  expect(verify.code).toBe(0);
}

describe("identity.include reaching portcullis's state directory", () => {
  it("`../**` with the state directory next to the project: its files are left out, said once; calls are no change, a plugin still is", async () => {
    const root = tempDir("portcullis-statewatch-");
    cleanup.push(() => removeDir(root));
    const project = makeProject("A", { parent: root });
    const stateDir = join(root, "portcullis-state");
    renameSync(newStateDir(), stateDir);
    put(root, "plugins/plugin.js", "export default 'plugin 1';\n");
    const gw = await startWithInclude(project.dir, stateDir, ["../**"]);

    await gw.waitForStderr(
      /identity\.include of "inventory" in .*portcullis\.json: "\.\.\/\*\*" reaches portcullis's state directory .*portcullis-state: its files .* are left out of its identity and not watched/,
    );
    await callsThenPluginChange(gw, stateDir, join(root, "plugins/plugin.js"));
    expect(gw.stderr().match(/reaches portcullis's state directory/g)?.length).toBe(1);
  });

  it("a link to the state directory among the plugins: not followed, said once; calls are no change, a plugin still is", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    mkdirSync(join(project.dir, "plugins"));
    put(project.dir, "plugins/plugin.js", "export default 'plugin 1';\n");
    symlinkSync(stateDir, join(project.dir, "plugins/gateway-state"));
    const gw = await startWithInclude(project.dir, stateDir, ["plugins/**"]);

    await gw.waitForStderr(/"plugins\/\*\*" reaches portcullis's state directory/);
    expect((await statusOf(gw)).files).toBe(1);
    await callsThenPluginChange(gw, stateDir, join(project.dir, "plugins/plugin.js"));
  });
});

describe("a state directory inside the dependency tree", () => {
  it("is not digested: a write of the store leaves the tree's digest as it was", async () => {
    const root = tempDir("portcullis-statewatch-");
    cleanup.push(() => removeDir(root));
    const dir = makeBareProject(join(root, "app"));
    const stateDir = join(dir, "node_modules/pkg/gateway-state");
    put(stateDir, "portcullis.db-wal", "one write\n");
    setStateDir(stateDir);
    cleanup.push(() => setStateDir(null));
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const before = await captureStaticIdentity(spec, new DigestCache(null));
    put(stateDir, "portcullis.db-wal", "one write\nand another\n");
    const after = await captureStaticIdentity(spec, new DigestCache(null));
    expect(after.dependencyTree!.sha256).toBe(before.dependencyTree!.sha256);
    // a file of the package itself still counts
    put(dir, "node_modules/pkg/lib/util.js", "module.exports = { answer: 43 };\n");
    const changed = await captureStaticIdentity(spec, new DigestCache(null));
    expect(changed.dependencyTree!.sha256).not.toBe(before.dependencyTree!.sha256);
  });
});
