// Identity inputs outside the project: an absolute path in --watch (or identity.include) is
// watched where it is, so a plugin loaded from there that changes is an artifact change, and a
// pattern that can never match is refused naming the flag. Real gateways, real files.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadGlob } from "../../src/identity/glob.js";
import { matchIncludes } from "../../src/identity/includeMatch.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("identity inputs given by absolute path", () => {
  it("a plugin outside the project, watched by absolute path, changes: reported, and a new epoch under restart", async () => {
    const project = makeProject("A");
    const outside = tempDir("portcullis-plugins-");
    cleanup.push(
      () => project.cleanup(),
      () => removeDir(outside),
    );
    mkdirSync(join(outside, "plugins"), { recursive: true });
    const plugin = join(outside, "plugins", "plugin.js");
    writeFileSync(plugin, "export const v = 1;\n");
    const gw = await startInventory(
      project,
      [
        "--approval",
        "none",
        "--on-change",
        "restart",
        "--watch",
        plugin,
        "--watch",
        `${outside}/plugins/*.js`,
      ],
      { credentials: true },
    );
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const epochOf = async () =>
      (
        JSON.parse((await runCli(["status", "--json"], { stateDir: gw.stateDir })).stdout) as {
          gateways: { epoch: string }[];
        }
      ).gateways[0]!.epoch;
    const before = await epochOf();
    writeFileSync(plugin, "export const v = 2;\n");
    await gw.waitForStderr(/build complete: .*plugin\.js.* changed/, 15_000);
    await gw.waitForStderr(/new execution epoch: .*restart/, 15_000);
    // the gateway's row is written within 10 ms of its lock or at the next heartbeat (5 s): a
    // loaded machine's status may show the old epoch for that long after the log line
    let now = before;
    await waitFor(
      async () => {
        now = await epochOf();
        return now !== before || undefined;
      },
      15_000,
      "status --json to show the new epoch",
    );
    expect(now).not.toBe(before);
  });

  it("a path that does not exist and has no glob, or a malformed glob, is refused naming --watch", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    for (const bad of ["/nonexistent/portcullis/plugin.js", "src/[unclosed"]) {
      const r = await runCli(["run", "--label", "x", "--watch", bad, "--", ...project.command], {
        cwd: project.dir,
        stateDir: tempDir("portcullis-state-"),
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("--watch");
      expect(r.stderr).toContain(bad);
    }
  });

  it("each refusal of a pattern is one sentence ending with a period, as every other refusal", async () => {
    // they ended without one ("… (and it has no glob)" then the newline)
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const said: [string, string][] = [
      ["", `"" is empty; give a path or a glob such as dist/**.`],
      ["src/[unclosed", `"src/[unclosed" is not a valid glob (an unclosed [, { or ( ).`],
      [
        "~nosuchuser/x",
        `"~nosuchuser/x" names another user's home directory (~user); give an absolute path.`,
      ],
      [
        "missing.js",
        `"missing.js" can never match: ${join(project.dir, "missing.js")} does not exist (and it has no glob).`,
      ],
    ];
    for (const [pattern, sentence] of said) {
      const r = await runCli(["run", "--label", "x", "--watch", pattern, "--", ...project.command], {
        cwd: project.dir,
        stateDir: tempDir("portcullis-state-"),
      });
      expect(r.code, pattern).toBe(2);
      expect(r.stderr, pattern).toBe(`portcullis run: --watch: ${sentence}\n`);
    }
  });

  it("identity.include of portcullis.json that can never match is refused by run, naming the file and the label", async () => {
    // it read "portcullis: identity.include of …", the one refusal of run not named by run
    const dir = tempDir("portcullis-include-");
    cleanup.push(() => removeDir(dir));
    const file = join(dir, "portcullis.json");
    writeFileSync(file, JSON.stringify({ servers: { a: { command: "node", identity: { include: [""] } } } }));
    const r = await runCli(["run", "a"], { cwd: dir, stateDir: tempDir("portcullis-state-") });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: identity.include of "a" in ${file}: "" is empty; give a path or a glob such as dist/**.\n`,
    );
  });

  it("a pattern going up (`../plugins/**`) names its files without the `..`, as the watcher's events do", async () => {
    const root = tempDir("portcullis-up-");
    cleanup.push(() => removeDir(root));
    mkdirSync(join(root, "app"));
    mkdirSync(join(root, "plugins"));
    writeFileSync(join(root, "plugins", "plugin.js"), "export const v = 1;\n");
    const m = matchIncludes(join(root, "app"), ["../plugins/**"], await loadGlob());
    expect(m.files.map((f) => [f.rel, f.abs])).toEqual([
      ["../plugins/plugin.js", join(root, "plugins", "plugin.js")],
    ]);
  });
});
