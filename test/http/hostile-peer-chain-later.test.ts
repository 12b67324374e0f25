// A modern-era connection's process (pid and start time) is found at its first request, but its
// run's process chain is read later, at its first request other than server/discover. By then
// the process found may be gone, and its pid free for another process to take: the chain read
// from that pid must not be recorded as the client's. Here the client sends server/discover, hands
// its connection to a child (the descriptor, inherited) and exits; once it is reaped, the child
// sends tools/list on that connection. The run's chain starts at the pid the front found, whose
// process is gone: it is recorded as an unknown client saying so, not as that pid. (A pid taken
// by another process meanwhile cannot be arranged by a test; the start-time check that refuses
// a gone process is the one that refuses a new one under the same pid.)
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { modernRequester } from "./pipeline.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const request = modernRequester("peer-chain-later");

/** One POST as bytes on the wire. */
function post(l: Listener, body: unknown): string {
  const text = JSON.stringify(body);
  const headers = {
    ...l.headers(),
    host: `127.0.0.1:${l.port}`,
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(text)),
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  return `POST /mcp HTTP/1.1\r\n${head}\r\n${text}`;
}

// the child: waits for the end of its stdin (the client's, whose other end this test closes once
// the client is reaped), then sends its request on the inherited connection (fd 3)
const CHILD = `
const net = require("node:net");
process.stdin.resume();
process.stdin.once("end", () => {
  const s = new net.Socket({ fd: 3, readable: true, writable: true });
  s.on("data", (d) => process.stdout.write(d));
  s.write(process.argv[1]);
});`;

// the client: connects, sends its first request, and at a line on stdin hands the connection to
// a child and exits (printing the child's pid)
const CLIENT = `
const net = require("node:net");
const { spawn } = require("node:child_process");
const [port, first, second, child] = process.argv.slice(1);
const s = net.connect(Number(port), "127.0.0.1", () => s.write(first));
s.on("data", (d) => process.stdout.write(d));
process.stdin.once("data", () => {
  s.pause();
  const c = spawn(process.execPath, ["-e", child, second], {
    stdio: ["inherit", "inherit", "inherit", s._handle.fd],
  });
  c.once("spawn", () => {
    process.stdout.write("\\nchild " + c.pid + "\\n");
    process.exit(0);
  });
});`;

describe.runIf(process.platform === "linux")("a modern-era run begun after its process is gone", () => {
  it("records no process for its client: the pid found at the connection no longer names it", async () => {
    const l = await startListener([NODE, FIXTURES.modern]);
    cleanup.push(() => l.close());
    const client: ChildProcess = spawn(
      NODE,
      [
        "-e",
        CLIENT,
        String(l.port),
        post(l, request(1, "server/discover")),
        post(l, request(2, "tools/list")),
        CHILD,
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    cleanup.push(() => void client.kill("SIGKILL"));
    let out = "";
    client.stdout!.on("data", (c) => {
      out += c;
    });
    const exited = new Promise<void>((resolve) => client.once("exit", () => resolve()));
    await waitFor(
      () => l.stderr().includes(`(modern) from pid ${client.pid}`),
      10_000,
      "the client's session line",
    );
    await waitFor(() => out.includes('"result"'), 10_000, "the discover answer");
    client.stdin!.write("go\n");
    const childPid = Number((await waitFor(() => /\nchild (\d+)\n/.exec(out), 10_000, "the child's pid"))[1]);
    cleanup.push(() => {
      try {
        process.kill(childPid, "SIGKILL");
      } catch {
        /* gone */
      }
    });
    await exited; // reaped by this process: its pid names no process now
    client.stdin!.end(); // (node closes it at the exit already): the child sends its request
    await waitFor(() => out.includes('"id":2'), 10_000, `the tools/list answer in ${JSON.stringify(out)}`);
    const db = openStore(l.stateDir);
    try {
      const runs = db.prepare("SELECT chain_json FROM runs").all() as { chain_json: string }[];
      expect(runs).toHaveLength(1);
      const chain = JSON.parse(runs[0]!.chain_json) as { pid: number; note?: string }[];
      expect(chain.map((e) => e.pid)).toEqual([0]);
      expect(chain[0]!.note).toContain(
        `the connecting process (pid ${client.pid}) ended before its run began`,
      );
    } finally {
      db.close();
    }
  });
});
