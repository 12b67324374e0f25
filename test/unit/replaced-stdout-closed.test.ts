// A server seen to execve() into other code (a replacement: a new epoch under the same pid) whose
// new program closes its stdout while the replacement's identity is still being captured. The
// supervisor left a pipe lost in that stretch to nobody: the capture's end then gave the
// replacement an epoch on a worker that can never answer: the gateway held its requests for that
// epoch (identity-pending), and nothing respawned the server. It must count as a crash: stopped,
// then respawned.
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { Logger } from "../../src/util/log.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { NODE } from "../helpers/paths.js";
import { deferredCleanup, supervisorIn } from "../helpers/supervisor.js";

const defer = deferredCleanup();

/**
 * `dir/node`: a "runtime" the capture asks for its version at every capture (its answer has no
 * version number, so none is cached); while `hold` exists that question says so (`asked`) and is
 * answered only once `release` exists, which holds the capture open. Run as the server, it reads
 * one line, then execs into node, which closes its stdout when it reads `close` and runs on.
 */
function heldServer(dir: string): void {
  const at = (name: string) => JSON.stringify(join(dir, name));
  const closer = `process.stdin.on("data", (b) => { if (String(b).includes("close")) require("fs").closeSync(1); }); setInterval(() => {}, 1000);`;
  writeFileSync(
    join(dir, "node"),
    [
      "#!/bin/sh",
      'if [ "$1" = "--version" ]; then',
      `  if [ -e ${at("hold")} ]; then`,
      `    : > ${at("asked")}`,
      "    i=0",
      `    while [ ! -e ${at("release")} ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done`,
      "  fi",
      "  echo 'no version here'",
      "  exit 0",
      "fi",
      "read line",
      `exec ${JSON.stringify(NODE)} -e '${closer}'`,
      "",
    ].join("\n"),
  );
  chmodSync(join(dir, "node"), 0o755);
  writeFileSync(join(dir, "server.mjs"), "// the entry the capture reads; ./node runs its own code\n");
}

it.skipIf(process.platform !== "linux")(
  "a replaced server that closes its stdout while the replacement is captured is stopped and respawned, never given an epoch",
  async () => {
    const dir = tempDir("pc-replaced-stdout-");
    defer(() => removeDir(dir));
    heldServer(dir);
    const warnings: string[] = [];
    const log = {
      debug: () => {},
      info: () => {},
      status: () => {},
      warn: (m: string) => warnings.push(m),
    } as unknown as Logger;
    const { sup, ups } = supervisorIn(
      dir,
      { serverLabel: "replaced", command: "./node", args: ["server.mjs"] },
      { log },
    );
    defer(() => sup.shutdown());
    const first = await sup.start();
    sup.settle(first);
    writeFileSync(join(dir, "hold"), "");
    sup.send({ go: true }); // it reads its line, then execs into node: other code, same pid
    await waitFor(() => sup.checkReplacement(), 10_000, "the execve to be seen");
    await waitFor(() => existsSync(join(dir, "asked")), 10_000, "the replacement's capture to ask");
    first.child.stdin.write("close\n"); // its new program closes its stdout, mid-capture
    await waitFor(() => first.child.stdout.readableEnded, 10_000, "its stdout to end");
    // room for the supervisor to find it still running without its stdout (bounded, not asserted)
    const until = Date.now() + 3_000;
    await waitFor(
      () => warnings.some((w) => /closed its stdout while still running/.test(w)) || Date.now() > until,
    );
    writeFileSync(join(dir, "release"), "");
    // the next epoch is a respawned server, not the replaced one that can no longer answer
    const next = await waitFor(() => ups[1], 15_000, "the next epoch");
    expect(next.reason).toBe("respawn");
    expect(next.child.pid).not.toBe(first.child.pid);
    expect(warnings.some((w) => /closed its stdout while still running/.test(w))).toBe(true);
  },
);
