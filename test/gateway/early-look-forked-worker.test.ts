// A worker seen between its fork and its execve() before the server's first answer. The look
// before the first answer (ReplacementDetector.lookEarly) matches a watcher's new worker with the
// one it replaced by the command each runs; a process seen only as its parent's copy shows the
// parent's command, and a worker seen only so, then swapped before the idle poll's next look (half
// a second), could not be matched with its successor: the client's first initialize, lost with
// it, was never answered (first-initialize-rebuilt.test.ts timed out in CI this way). A copy is now
// looked at again soon, and the gateway says a process holds its pipe only once it knows what it
// runs. Here a shell's subshell stays a copy of the shell for 300 ms, then becomes the server.
// Real gateway, real processes.
import { realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { readJsonLines, removeDir, tempDir } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("a worker first seen as its shell's copy is said to hold the gateway's pipe as the server it becomes, not as the shell", async () => {
  const dir = tempDir("portcullis-forked-worker-");
  cleanup.push(() => removeDir(dir));
  const script = join(dir, "serve.sh");
  const methods = join(dir, "methods.jsonl");
  writeFileSync(script, `( sleep 0.3; exec '${NODE}' '${FIXTURES.lenient}' )\n`);
  const peer = rawGateway({
    args: ["--label", "forked-worker", "--approval", "none", "--", "/bin/sh", script],
    env: { PORTCULLIS_DEBUG: "1", FIXTURE_METHOD_LOG: methods },
  });
  cleanup.push(() => peer.close());
  const init = await peer.initialize({}, 20_000);
  expect(init.result, `${JSON.stringify(init)}\n${peer.stderr()}`).toMatchObject({
    serverInfo: { name: "lenient-fixture" },
  });
  const worker = readJsonLines<{ pid: number; method: string }>(methods).find(
    (m) => m.method === "initialize",
  )!.pid;
  const said = peer
    .stderr()
    .split("\n")
    .filter((l) => l.includes(`before its first answer, process ${worker} (`));
  expect(said, peer.stderr()).toHaveLength(1);
  expect(said[0]).toContain(`process ${worker} (${realpathSync(NODE)}) holds the gateway's output pipe`);
}, 60_000);
