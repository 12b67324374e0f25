// Before a server's first answer the supervisor looks at its process tree for a watcher's worker
// swap (Supervisor.checkEarly, ReplacementDetector.lookEarly; first-initialize-rebuilt.test.ts is
// the swap). A wrapper that runs other processes on the gateway's pipe before it starts the real
// server is no swap: a build step that inherits the pipe, then the server (`sh -c "build && node
// server"`), a polling loop that runs the same helper again and again before it (`until nc -z
// db; do sleep 1; done; node server`), or a build step whose workers are copies of itself (node
// cluster: the primary's argv, the pipe inherited). Each starts normally, under ONE epoch, its client's
// first initialize (sent while the wrapper still runs) answered by the server. Each test waits
// until the gateway has seen the wrapper's processes on its pipe (its debug lines), never a sleep,
// so the look had something to judge. Real gateway, real processes.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const INIT = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } };

/** The pids the gateway said held its output pipe before the first answer, with their executables. */
function seenOnPipe(peer: RawGateway): { pid: number; exe: string }[] {
  return [...peer.stderr().matchAll(/before its first answer, process (\d+) \(([^)]*)\) holds/g)].map(
    (m) => ({
      pid: Number(m[1]),
      exe: m[2]!,
    }),
  );
}

/** The client's first initialize, sent while the wrapper runs, is answered by the server: one epoch. */
async function startsOnce(peer: RawGateway, methods: string): Promise<void> {
  const init = await peer.next((m) => m.id === "init:1", 30_000);
  expect(init.result, `${JSON.stringify(init)}\n${peer.stderr()}`).toMatchObject({
    serverInfo: { name: "lenient-fixture" },
  });
  peer.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  const list = await peer.request("tools/list", undefined, 20_000);
  expect(list.result, JSON.stringify(list)).toMatchObject({ tools: expect.any(Array) });
  expect(peer.stderr()).not.toMatch(/running server replaced/);
  const events = await auditEvents(peer.stateDir);
  expect(
    events.filter((e) => e.type === "server_started"),
    JSON.stringify(events),
  ).toHaveLength(1);
  expect(events.filter((e) => e.type === "server_replaced")).toHaveLength(0);
  // one server process got it all, the client's initialize first
  const got = readJsonLines<{ pid: number; method: string }>(methods);
  expect(new Set(got.map((m) => m.pid)).size).toBe(1);
  expect(got.map((m) => m.method)).toEqual(["initialize", "notifications/initialized", "tools/list"]);
}

describe.runIf(process.platform === "linux")("a wrapper before the server's first answer", () => {
  it('sh -c "node build.mjs && node server": the build step held the pipe and is gone, a node process started after it; one epoch', async () => {
    const dir = tempDir("portcullis-first-answer-build-");
    cleanup.push(() => removeDir(dir));
    const go = join(dir, "go");
    const stepPid = join(dir, "step.pid");
    const methods = join(dir, "methods.jsonl");
    // a build step: the same executable as the server, another script; it inherits the pipe
    const step = join(dir, "build.mjs");
    writeFileSync(
      step,
      `import { existsSync, readFileSync, writeFileSync } from "node:fs";
writeFileSync(${JSON.stringify(stepPid)}, String(process.pid));
const t = setInterval(() => { if (existsSync(${JSON.stringify(go)})) clearInterval(t); }, 20);
`,
    );
    const script = `"${NODE}" "${step}" && "${NODE}" "${FIXTURES.lenient}"`;
    const peer = rawGateway({
      args: ["--label", "first-answer-build", "--approval", "none", "--", "/bin/sh", "-c", script],
      env: { FIXTURE_METHOD_LOG: methods, PORTCULLIS_DEBUG: "1" },
    });
    cleanup.push(() => peer.close());
    peer.send({ jsonrpc: "2.0", id: "init:1", method: "initialize", params: INIT });
    const pid = Number(
      await waitFor(() => (existsSync(stepPid) ? readPid(stepPid) : undefined), 20_000, "the build step"),
    );
    await waitFor(
      () => seenOnPipe(peer).some((p) => p.pid === pid && p.exe.includes("node")) || undefined,
      20_000,
      "the build step seen on the gateway's pipe",
    );
    writeFileSync(go, "");
    await startsOnce(peer, methods);
  }, 90_000);

  it("a polling loop before the server (while …; do sleep; done; node server): each sleep held the pipe and is gone, the next is the same command; one epoch", async () => {
    const dir = tempDir("portcullis-first-answer-poll-");
    cleanup.push(() => removeDir(dir));
    const go = join(dir, "go");
    const methods = join(dir, "methods.jsonl");
    const script = `while [ ! -e "${go}" ]; do sleep 0.2; done; "${NODE}" "${FIXTURES.lenient}"`;
    const peer = rawGateway({
      args: ["--label", "first-answer-poll", "--approval", "none", "--", "/bin/sh", "-c", script],
      env: { FIXTURE_METHOD_LOG: methods, PORTCULLIS_DEBUG: "1" },
    });
    cleanup.push(() => peer.close());
    peer.send({ jsonrpc: "2.0", id: "init:1", method: "initialize", params: INIT });
    // three sleeps seen, each at its own look: a later one started after an earlier one was gone
    await waitFor(
      () =>
        new Set(
          seenOnPipe(peer)
            .filter((p) => /sleep/.test(p.exe))
            .map((p) => p.pid),
        ).size >= 3 || undefined,
      30_000,
      "three of the loop's sleeps seen on the gateway's pipe",
    );
    writeFileSync(go, "");
    await startsOnce(peer, methods);
  }, 90_000);
  it("a build step that is a node cluster (its workers copies of it on the pipe), one worker replaced by the next: copies of their parent are not judged; one epoch", async () => {
    const dir = tempDir("portcullis-first-answer-cluster-");
    cleanup.push(() => removeDir(dir));
    const go = join(dir, "go");
    const pids = join(dir, "workers");
    const methods = join(dir, "methods.jsonl");
    // node:cluster forks each worker with the primary's own argv, its stdio inherited
    const step = join(dir, "pool.mjs");
    writeFileSync(
      step,
      `import cluster from "node:cluster";
import { appendFileSync, existsSync } from "node:fs";
const go = ${JSON.stringify(go)};
if (cluster.isPrimary) {
  const next = () => cluster.fork().on("exit", () => (existsSync(go) ? process.exit(0) : next()));
  next();
} else {
  appendFileSync(${JSON.stringify(pids)}, process.pid + "\\n");
  const done = ${JSON.stringify(join(dir, "done-"))} + process.pid;
  setInterval(() => { if (existsSync(done) || existsSync(go)) process.exit(0); }, 20);
}
`,
    );
    const script = `"${NODE}" "${step}" && "${NODE}" "${FIXTURES.lenient}"`;
    const peer = rawGateway({
      args: ["--label", "first-answer-cluster", "--approval", "none", "--", "/bin/sh", "-c", script],
      env: { FIXTURE_METHOD_LOG: methods, PORTCULLIS_DEBUG: "1" },
    });
    cleanup.push(() => peer.close());
    peer.send({ jsonrpc: "2.0", id: "init:1", method: "initialize", params: INIT });
    const worker = async (n: number): Promise<number> => {
      const pid = Number(
        await waitFor(
          () => {
            const all = existsSync(pids) ? readFileSync(pids, "utf8").split("\n").filter(Boolean) : [];
            return all[n];
          },
          20_000,
          `cluster worker ${n + 1}`,
        ),
      );
      await waitFor(
        () => seenOnPipe(peer).some((p) => p.pid === pid) || undefined,
        20_000,
        `cluster worker ${n + 1} seen on the gateway's pipe`,
      );
      return pid;
    };
    const first = await worker(0);
    writeFileSync(join(dir, `done-${first}`), ""); // it exits; the primary forks the next
    await worker(1);
    writeFileSync(go, "");
    await startsOnce(peer, methods);
  }, 90_000);
});

function readPid(path: string): number | undefined {
  const n = Number(readFileSync(path, "utf8").trim());
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
