// A write to a watched file after the launch's capture read it and before the artifact watcher was
// set up has no watcher event and no ctime after the capture's own look: the epoch would record
// bytes that are no longer the ones on disk, with nothing to restart or report it. The window is
// held open here without load: the server is run by a `node` of the fixture's own, a script the
// capture asks for its version (after every file is digested, before it returns) and that answers
// only once the server has written its file. The order is the same on every run: digest, the
// runtime asked, the write, the answer, the watcher set up.
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * A project whose `node` runs the real one, except `node --version` (the capture's question about
 * its runtime), which says it was asked (`asked`) and answers once `written` exists. Its server
 * writes `gen.json` once, after `asked`, then says so (`written`) and serves as the echo fixture.
 */
function heldWindowProject(): string {
  const dir = tempDir("portcullis-window-");
  cleanup.push(() => removeDir(dir));
  const at = (name: string) => JSON.stringify(join(dir, name));
  writeFileSync(
    join(dir, "node"),
    [
      "#!/bin/sh",
      'if [ "$1" = "--version" ]; then',
      `  : > ${at("asked")}`,
      "  i=0",
      `  while [ ! -e ${at("written")} ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done`,
      "fi",
      `exec ${JSON.stringify(NODE)} "$@"`,
      "",
    ].join("\n"),
  );
  chmodSync(join(dir, "node"), 0o755);
  writeFileSync(
    join(dir, "server.mjs"),
    `import { existsSync, writeFileSync } from "node:fs";
const here = (name) => new URL(name, import.meta.url);
if (!existsSync(here("./written"))) {
  for (let i = 0; i < 1000 && !existsSync(here("./asked")); i++) await new Promise((r) => setTimeout(r, 10));
  writeFileSync(here("./gen.json"), JSON.stringify({ pid: process.pid }));
  writeFileSync(here("./written"), "");
}
await import(${JSON.stringify(pathToFileURL(FIXTURES.echo).href)});
`,
  );
  writeFileSync(join(dir, "gen.json"), "{}");
  return dir;
}

describe("a watched file written between the capture and the watcher", () => {
  it("is a change of the first epoch's code: restarted under onChange restart, and audited", async () => {
    const dir = heldWindowProject();
    const gw: RawPeer = rawGateway({
      args: [
        "--label",
        "window",
        "--approval",
        "none",
        "--on-change",
        "restart",
        "--watch",
        "gen.json",
        "--",
        "./node",
        "server.mjs",
      ],
      cwd: dir,
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    // the write was made where it should be: after the capture asked for the runtime's version
    expect(existsSync(join(dir, "asked"))).toBe(true);
    expect(existsSync(join(dir, "written"))).toBe(true);
    await waitFor(
      () => /new execution epoch: .*; restart\)/.test(gw.stderr()),
      20_000,
      "a restart for the write the watcher was not set up to see",
    ).catch((e: Error) => {
      throw new Error(`${e.message}; the gateway's stderr ends:\n${gw.stderr().slice(-3000)}`);
    });
    const events = await waitFor(
      async () => {
        const all = await auditEvents(gw.stateDir);
        return all.some((e) => e.type === "artifact_changed") ? all : null;
      },
      10_000,
      "the change in the audit",
    );
    const changed = events.find((e) => e.type === "artifact_changed")!;
    expect(changed.paths).toEqual(["gen.json"]);
    expect(changed.parts).toEqual(["identity inputs"]);
    // the restarted server serves, and nothing more restarts it: its start wrote nothing
    const call = await gw.request("tools/call", { name: "echo", arguments: { message: "x" } }, 15_000);
    expect(call.result).toBeDefined();
    expect(gw.stderr().match(/; restart\)/g)).toHaveLength(1);
  }, 60_000);
});
