// Identity inputs reached through symbolic links and hard links. Plugin layouts are made of links
// (`plugins/x -> ../available/x`, `current -> releases/v1`): an include pattern's links are
// followed, so their files are digested by content and a change to them is a new epoch under
// `onChange: restart`. A file changed through a hard link made outside every watched directory
// raises no inotify event: the stat poll sees it. Real gateways, real files.
import { closeSync, ftruncateSync, linkSync, mkdirSync, openSync, symlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { captureStaticIdentity, DigestCache, watchedPaths } from "../../src/identity/index.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { gatewayRow } from "../helpers/status.js";
import { makeProject as makeBareProject, put, removeDir, specFor, tempDir } from "./fixtures.js";

type Gateway = Awaited<ReturnType<typeof startGateway>>;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Inputs {
  patterns: string[];
  files: number;
  sha256: string;
}

/** The gateway for `project` from a portcullis.json naming `include`, onChange restart. */
async function startWithInclude(project: Project, include: string[]): Promise<Gateway> {
  const config = {
    servers: {
      inventory: {
        command: NODE,
        args: ["dist/server.js"],
        cwd: ".",
        env: { ...project.env },
        identity: { include },
        onChange: "restart",
        approval: { default: "none" },
      },
    },
  };
  put(project.dir, "portcullis.json", JSON.stringify(config, null, 2));
  const gw = await startGateway({ args: ["inventory"], cwd: project.dir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

/**
 * The gateway's epoch and identity inputs as `status --json` shows them, once its row shows an
 * epoch (with `after`, another than that one). The row is written as an epoch comes up, or, when
 * the store was busy then, at the next heartbeat (5 s): read once right after the "new execution
 * epoch" line, a loaded machine's status could still show the epoch before.
 */
async function gatewayOf(gw: Gateway, after?: string): Promise<{ epoch: string; inputs: Inputs }> {
  await gatewayRow(
    gw.stateDir!,
    (r) => r.epoch !== null && r.epoch !== after,
    after === undefined ? "the row to show an epoch" : `the row to show an epoch after ${after}`,
    15_000,
  );
  const status = JSON.parse((await runCli(["status", "--json"], { stateDir: gw.stateDir })).stdout) as {
    gateways: { epoch: string; record: { identityInputs: Inputs } }[];
  };
  return { epoch: status.gateways[0]!.epoch, inputs: status.gateways[0]!.record.identityInputs };
}

describe("identity.include through symbolic links", () => {
  it("a linked plugin file and a linked release directory are digested and watched; an unmatched pattern is named with its config file", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    put(project.dir, "available/fresh.js", "export default 'fresh 1';\n");
    mkdirSync(join(project.dir, "plugins"));
    symlinkSync("../available/fresh.js", join(project.dir, "plugins/fresh.js"));
    put(project.dir, "releases/v1/tool.js", "export default 'tool 1';\n");
    symlinkSync("releases/v1", join(project.dir, "current"));
    const gw = await startWithInclude(project, ["plugins/fresh.js", "current/**", "later/*.js"]);

    await gw.waitForStderr(
      /identity\.include of "inventory" in .*portcullis\.json: "later\/\*\.js" matches no file/,
    );
    const first = await gatewayOf(gw);
    expect(first.inputs.files).toBe(2);

    // an edit of the linked file's target (where the link leads, not the link)
    put(project.dir, "available/fresh.js", "export default 'fresh 2';\n");
    await gw.waitForStderr(/new execution epoch: .*restart/, 15_000);
    const second = await gatewayOf(gw, first.epoch);
    expect(second.epoch).not.toBe(first.epoch);
    expect(second.inputs.sha256).not.toBe(first.inputs.sha256);

    // an edit inside the linked directory
    const from = gw.stderr().length;
    put(project.dir, "releases/v1/tool.js", "export default 'tool 2';\n");
    await gw.waitForStderr(/new execution epoch: .*restart/, 15_000, from);
    expect((await gatewayOf(gw, second.epoch)).epoch).not.toBe(second.epoch);
  });

  it("links to directories are followed once: a link back up the tree is not walked, a dangling link is named", async () => {
    const root = tempDir("include-links");
    cleanup.push(() => removeDir(root));
    const dir = makeBareProject(join(root, "app"));
    put(dir, "plugins-v1/a.js", "a\n");
    put(dir, "plugins-v1/deep/b.js", "b\n");
    symlinkSync("plugins-v1", join(dir, "plugins"));
    symlinkSync("..", join(dir, "plugins-v1/deep/up")); // back to plugins-v1: a loop
    symlinkSync(".", join(dir, "plugins-v1/self"));
    symlinkSync(dir, join(dir, "plugins-v1/root")); // contains the plugins: a loop too
    symlinkSync("../..", join(dir, "plugins-v1/deep/top")); // the same, from further down
    put(dir, "shared/c.js", "c\n");
    symlinkSync("../../shared", join(dir, "plugins-v1/deep/shared")); // followed: shared/c.js
    symlinkSync("../plugins-v1", join(dir, "shared/back")); // back through another link: a loop
    put(dir, "a/f.js", "f\n");
    put(dir, "b/g.js", "g\n");
    symlinkSync("../b", join(dir, "a/x")); // followed: a/x/g.js
    symlinkSync("../a", join(dir, "b/y")); // a/x/y is a again: a loop
    symlinkSync("gone.js", join(dir, "plugins-v1/dangling.js"));
    const spec = specFor(dir, "node", ["dist/server.js"], { include: ["plugins/**", "a/**"] });
    const s = await captureStaticIdentity(spec, new DigestCache(null));
    // plugins/: a.js, deep/b.js, deep/shared/c.js and the dangling link by its text; a/: f.js
    // and x/g.js; nothing twice through a loop
    expect(s.identityInputs!.files).toBe(6);
    const w = watchedPaths(s);
    expect(w.dirs).toContainEqual({ path: join(dir, "plugins-v1"), depth: 20, kind: "include" });
    expect(w.dirs).toContainEqual({ path: join(dir, "shared"), depth: 20, kind: "include" });
    expect(w.files).toContain(join(dir, "plugins"));

    // pointing the dangling link at a file changes the digest
    put(dir, "plugins-v1/gone.js", "now here\n");
    const again = await captureStaticIdentity(spec, new DigestCache(null));
    expect(again.identityInputs!.sha256).not.toBe(s.identityInputs!.sha256);
  });
});

describe("identity.include changed through a hard link", () => {
  it("a write through a hard link made outside every watched directory is seen and restarts the server", async () => {
    const project = makeProject("A");
    const outside = tempDir("outside");
    cleanup.push(
      () => project.cleanup(),
      () => removeDir(outside),
    );
    put(project.dir, "plugins/fresh.js", "export default 'fresh 1';\n");
    const gw = await startWithInclude(project, ["plugins/*.js"]);
    const before = await gatewayOf(gw);
    expect(before.inputs.files).toBe(1);

    const other = join(outside, "other-name.js");
    linkSync(join(project.dir, "plugins/fresh.js"), other);
    const fd = openSync(other, "r+");
    ftruncateSync(fd, 0);
    writeSync(fd, "export default 'changed through another name';\n", 0);
    closeSync(fd);

    await gw.waitForStderr(/build complete: .*plugins\/fresh\.js.* changed/, 15_000);
    await gw.waitForStderr(/new execution epoch: .*restart/, 15_000);
    const after = await gatewayOf(gw, before.epoch);
    expect(after.epoch).not.toBe(before.epoch);
    expect(after.inputs.sha256).not.toBe(before.inputs.sha256);
  });
});
