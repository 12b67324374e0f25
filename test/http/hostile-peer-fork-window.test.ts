// A client that spawns a process as it sends its first request: between fork and exec the child
// holds a copy of the client's sockets (Node's are close-on-exec, so they go at the exec). When
// the front's lookup (src/cli/listen.ts findPeer) falls in that window, the socket is held by
// several processes. Read once and given up on, the connection stayed unidentified for its whole
// life: a modern-era client got a session and run of its own (its calls asked a human again,
// though its own session grant covered them), and a legacy session was bound to no process.
// The front now looks again a few times over a bounded time and takes the one holder when the
// others are gone; it never picks among several (test/http/hostile-peer-ambiguous.test.ts: a
// holder that stays keeps the connection unidentified, and it is shown here too).
//
// The other holder here is a child given the connection's descriptor (its fd 3): it is killed
// once the front says the socket is held by several processes (its look-again line with
// PORTCULLIS_DEBUG=1; before the fix, the session line itself).
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, storedPending } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { Connection, modernRequester } from "./pipeline.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const request = modernRequester("peer-fork-window");
const SEVERAL = "the connecting socket is held by several processes";

/** A process that holds `c`'s socket too (its fd 3, inherited) until it is killed. */
async function alsoHeldBy(c: Connection): Promise<ChildProcess> {
  const socket = (c as unknown as { socket: Socket }).socket;
  const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
  const holder = spawn(NODE, ["-e", "setInterval(() => {}, 1000)"], {
    stdio: ["ignore", "ignore", "ignore", fd],
  });
  cleanup.push(() => void holder.kill("SIGKILL"));
  await new Promise<void>((resolve, reject) => {
    holder.once("spawn", resolve);
    holder.once("error", reject);
  });
  return holder;
}

/** Resolves as soon as the listener's stderr holds `text` (read as it comes, not polled). */
function said(l: Listener, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!l.stderr().includes(text)) return;
      clearTimeout(timer);
      l.proc.stderr!.off("data", check);
      resolve();
    };
    const timer = setTimeout(() => {
      l.proc.stderr!.off("data", check);
      reject(new Error(`timed out waiting for "${text}" in: ${l.stderr()}`));
    }, 20_000);
    // registered after the listener's own reader: by the time it runs, stderr() has the chunk
    l.proc.stderr!.on("data", check);
    check();
  });
}

/** Kills `holder` once the front has found `c`'s socket held by several processes. */
async function goneOnceSeen(l: Listener, holder: ChildProcess): Promise<void> {
  await said(l, SEVERAL);
  holder.kill("SIGKILL");
  await new Promise<void>((resolve) => {
    if (holder.exitCode !== null || holder.signalCode !== null) resolve();
    else holder.once("exit", () => resolve());
  });
}

describe.runIf(process.platform === "linux")(
  "a connection another process holds too when it is first read",
  () => {
    it("is identified once that process is gone within the look-again window: its call is covered by its process's session grant", async () => {
      const l = await startListener([NODE, FIXTURES.modern], {
        args: ["--approval-timeout", "60000"],
        env: { PORTCULLIS_DEBUG: "1" },
      });
      cleanup.push(() => l.close());
      const seen = new Set<string>();
      const [a, b] = await Promise.all([Connection.open(l), Connection.open(l)]);
      cleanup.push(() => {
        a.close();
        b.close();
      });
      // A (this process, identified) gets a session grant for echo
      expect((await a.post(request(1, "server/discover"))).status).toBe(200);
      const a1 = a.post(request(2, "tools/call", { name: "echo", arguments: { text: "a1" } }));
      const pa = await nextStoredRequest(l.stateDir, seen);
      await decideByCli(l.stateDir, "approve", pa.request, "--for", "session");
      expect((await a1).body).toContain("a1");
      await waitFor(
        () => l.stderr().includes(`(modern) from pid ${process.pid}`),
        10_000,
        "A's session line",
      );

      // B, this process's second connection: another process holds its socket as its first
      // request is read, and is gone a moment later (a child that execs)
      const holder = await alsoHeldBy(b);
      let answer: string | null = null;
      const b1 = b.post(request(1, "tools/call", { name: "echo", arguments: { text: "b1" } }));
      b1.then(
        (r) => {
          answer = r.body;
        },
        () => {},
      );
      await goneOnceSeen(l, holder);
      // B is this process: A's session grant covers its call (no human is asked)
      const outcome = await waitFor(
        () => {
          if (answer !== null) return "answered";
          const asked = storedPending(l.stateDir).find((q) => !seen.has(q.request));
          return asked
            ? `asked a human for ${asked.tool} in run ${asked.agentRun} (A's: ${pa.agentRun})`
            : null;
        },
        20_000,
        "B's call answered or asked",
      );
      expect(outcome).toBe("answered");
      expect(answer).toContain("b1");
      expect(l.stderr()).not.toContain(`(modern) from ${SEVERAL}`);
    });

    it("a legacy session opened in that window is bound to its process", async () => {
      const l = await startListener([NODE, FIXTURES.modern], { env: { PORTCULLIS_DEBUG: "1" } });
      cleanup.push(() => l.close());
      const c = await Connection.open(l);
      cleanup.push(() => c.close());
      const holder = await alsoHeldBy(c);
      const init = c.post({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "peer-fork-window", version: "1" },
        },
      });
      await goneOnceSeen(l, holder);
      const r = await init;
      expect(r.status).toBe(200);
      const session = r.headers["mcp-session-id"] as string;
      await waitFor(
        () => l.stderr().includes(`http session ${session.slice(0, 8)}…`),
        10_000,
        "the session line",
      );
      expect(l.stderr()).toContain(`http session ${session.slice(0, 8)}… (legacy) from pid ${process.pid}`);
    });

    it("is not identified when the other process outlives the window (no one of several is picked)", async () => {
      const l = await startListener([NODE, FIXTURES.modern], { env: { PORTCULLIS_DEBUG: "1" } });
      cleanup.push(() => l.close());
      const c = await Connection.open(l);
      cleanup.push(() => c.close());
      const holder = await alsoHeldBy(c);
      const discovered = c.post(request(1, "server/discover"));
      const pids = [process.pid, holder.pid!].sort((x, y) => x - y).join(", ");
      await said(l, `(modern) from ${SEVERAL} (pids ${pids})`);
      holder.kill("SIGKILL");
      expect((await discovered).status).toBe(200);
    });
  },
);
