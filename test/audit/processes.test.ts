// Real processes: four writers appending at once make one chain; a writer killed with SIGKILL
// at any moment leaves a chain that verifies.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openRecords, storedRecords, verifyChain } from "../../src/audit/index.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { completeLines } from "../helpers/completeLines.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { waitFor } from "../helpers/files.js";
import { CHILDREN, PASSPHRASE, requireBuild, stateWithKeyring } from "./helpers.js";

interface Writer {
  child: ChildProcessWithoutNullStreams;
  out: string;
  ready: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function writer(stateDir: string, tag: string, count: number | "forever"): Writer {
  const child = spawn(process.execPath, [join(CHILDREN, "writer.mjs"), stateDir, tag, String(count)]);
  const w: Writer = {
    child,
    out: "",
    ready: Promise.resolve(),
    exited: Promise.resolve({ code: 0, signal: null }),
  };
  let err = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    err += d;
  });
  w.ready = new Promise((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      w.out += d;
      if (w.out.startsWith("ready\n")) resolve();
    });
    child.once("exit", () => reject(new Error(`writer ${tag} exited before it was ready: ${err}`)));
  });
  // its stdout and stderr read to their end too: the acknowledged appends are read once it exited
  w.exited = exitWithOutput(child).then((exit) => {
    if (exit.code !== 0 && exit.signal === null) console.error(err);
    return exit;
  });
  return w;
}

const go = (ws: Writer[]) => {
  for (const w of ws) w.child.stdin.end("go\n");
};

beforeAll(() => requireBuild());

describe("several writer processes", () => {
  it("append concurrently into one chain: no gap, no fork, every event once", async () => {
    const dir = await stateWithKeyring();
    const N = 150;
    const ws = ["w0", "w1", "w2", "w3"].map((tag) => writer(dir, tag, N));
    await Promise.all(ws.map((w) => w.ready));
    go(ws);
    const exits = await Promise.all(ws.map((w) => w.exited));
    expect(exits).toEqual(ws.map(() => ({ code: 0, signal: null })));

    const db = openStore(dir);
    expect(verifyChain(storedRecords(db))).toMatchObject({ ok: true, records: 4 * N, head: { seq: 4 * N } });
    const { auditPrivateKey } = await unlockKeyring(dir, PASSPHRASE);
    const opened = [...openRecords(db, auditPrivateKey)];
    db.close();
    expect(opened.map((r) => r.seq)).toEqual(Array.from({ length: 4 * N }, (_, i) => i + 1));
    const writers = new Map<string, { tag: string; pids: Set<number>; requestIds: number[] }>();
    for (const { header, event } of opened) {
      const w = writers.get(header.writer) ?? { tag: String(event.run), pids: new Set(), requestIds: [] };
      w.pids.add(header.pid);
      w.requestIds.push(Number(event.requestId));
      expect(event.run).toBe(w.tag);
      writers.set(header.writer, w);
    }
    expect(writers.size).toBe(4);
    for (const w of writers.values()) {
      expect(w.pids.size).toBe(1);
      expect(w.requestIds).toEqual(Array.from({ length: N }, (_, i) => i)); // each writer's order kept
    }
  });
});

describe("a writer killed with SIGKILL", () => {
  it("leaves a chain that verifies, whenever it dies, and others keep extending it", async () => {
    const dir = await stateWithKeyring();
    let durable = 0;
    for (let round = 0; round < 6; round++) {
      const victim = writer(dir, `victim${round}`, "forever");
      const bystander = writer(dir, `bystander${round}`, 40);
      await Promise.all([victim.ready, bystander.ready]);
      go([victim, bystander]);
      // Let it get going, then kill it at an arbitrary point — most of its time is spent
      // inside a transaction or its commit.
      const after = 1 + Math.floor(Math.random() * 20);
      await waitFor(() => victim.out.split("\n").length - 2 >= after, 30_000, `${after} appends`);
      await new Promise((r) => setTimeout(r, Math.random() * 20));
      victim.child.kill("SIGKILL");
      const [v, b] = await Promise.all([victim.exited, bystander.exited]);
      expect(v.signal).toBe("SIGKILL");
      expect(b).toEqual({ code: 0, signal: null });

      // (a line the kill cut short is no acknowledgement)
      const acknowledged = completeLines(victim.out).slice(1).filter(Boolean).map(Number);
      expect(acknowledged.length).toBeGreaterThan(0);
      const db = openStore(dir);
      const result = verifyChain(storedRecords(db));
      db.close();
      expect(result.ok, JSON.stringify(result)).toBe(true);
      if (!result.ok) return;
      // Every append the victim reported as done is in the chain (durable when append returned).
      expect(result.records).toBeGreaterThanOrEqual(Math.max(...acknowledged));
      expect(result.records).toBeGreaterThanOrEqual(durable + acknowledged.length + 40);
      durable = result.records;
    }
  });
});
