// Which run a modern-era connection belongs to is read from the kernel's socket tables once, at
// its first request (src/cli/listen.ts findPeer). A socket two processes hold when it is read (a
// child forked and not yet exec'd holds its parent's sockets: a client that spawns a process
// while it connects) names no one process. Such a connection must never be taken for either
// holder: not for the process with a session grant (its grant would cover calls it never made),
// and what is approved on it covers no call of that process either. Each side asks a human.
// (test/http/listen-modern-disconnect.test.ts timed out once so: its listing process was spawned
// while its second connection was read; that test now reads the store in its own process.)
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import type { Socket } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { startListener } from "./listen.js";
import { Connection, modernRequester } from "./pipeline.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const request = modernRequester("peer-ambiguous");

/** A process that holds `c`'s socket too (its fd 3, inherited) until it is killed. */
async function alsoHeldBy(c: Connection): Promise<ChildProcess> {
  const socket = (c as unknown as { socket: Socket }).socket;
  const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
  const holder = spawn(NODE, ["-e", "setInterval(() => {}, 1000)"], {
    stdio: ["ignore", "ignore", "ignore", fd],
  });
  await new Promise<void>((resolve, reject) => {
    holder.once("spawn", resolve);
    holder.once("error", reject);
  });
  return holder;
}

describe.runIf(process.platform === "linux")(
  "a connection whose socket two processes hold when it is first read",
  () => {
    it("is taken for neither: another connection's session grant does not cover it, nor its grant the other's calls", async () => {
      const dir = tempDir();
      cleanup.push(() => removeDir(dir));
      const record = join(dir, "calls.jsonl");
      const l = await startListener([NODE, FIXTURES.modern], {
        args: ["--approval-timeout", "60000"],
        env: { FIXTURE_RECORD: record },
      });
      cleanup.push(() => l.close());
      const ran = () =>
        existsSync(record)
          ? readJsonLines<{ tool: string; args: Record<string, string> }>(record).map(
              (r) => `${r.tool} ${r.args.text ?? r.args.environment}`,
            )
          : [];
      const seen = new Set<string>();
      const [a, b] = await Promise.all([Connection.open(l), Connection.open(l)]);
      cleanup.push(() => {
        a.close();
        b.close();
      });

      // A (this process, identified) gets a session grant for echo
      expect((await a.post(request(1, "server/discover"))).status).toBe(200);
      expect((await a.post(request(2, "tools/list"))).status).toBe(200);
      const a1 = a.post(request(3, "tools/call", { name: "echo", arguments: { text: "a1" } }));
      const pa = await nextStoredRequest(l.stateDir, seen);
      await decideByCli(l.stateDir, "approve", pa.request, "--for", "session");
      expect((await a1).body).toContain("a1");

      // B: this process holds its socket, and so does another while its first request is read
      const holder = await alsoHeldBy(b);
      cleanup.push(() => void holder.kill("SIGKILL"));
      const b1 = b.post(request(1, "tools/call", { name: "echo", arguments: { text: "b1" } }));
      // not covered by A's grant: it asks, for a run of its own
      const pb = await nextStoredRequest(l.stateDir, seen);
      expect(pb.tool).toBe("echo");
      expect(pb.agentRun).not.toBe(pa.agentRun);
      const pids = [process.pid, holder.pid!].sort((x, y) => x - y).join(", ");
      const line = `(modern) from the connecting socket is held by several processes (pids ${pids})`;
      await waitFor(() => l.stderr().includes(line), 10_000, "B's session line");
      holder.kill("SIGKILL");
      await decideByCli(l.stateDir, "approve", pb.request, "--for", "session");
      expect((await b1).body).toContain("b1");

      // B's session grant for delete_environment covers none of A's calls: A's asks a human
      const b2 = b.post(
        request(2, "tools/call", { name: "delete_environment", arguments: { environment: "b2" } }),
      );
      const pc = await nextStoredRequest(l.stateDir, seen);
      expect(pc.agentRun).toBe(pb.agentRun);
      await decideByCli(l.stateDir, "approve", pc.request, "--for", "session");
      expect((await b2).status).toBe(200);
      const a2 = a.post(
        request(4, "tools/call", { name: "delete_environment", arguments: { environment: "a2" } }),
      );
      const pd = await nextStoredRequest(l.stateDir, seen);
      expect(pd.tool).toBe("delete_environment");
      expect(pd.agentRun).toBe(pa.agentRun);
      await decideByCli(l.stateDir, "deny", pd.request);
      const refused = await a2;
      expect(refused.body).toContain('"error":"approval_denied"');
      await waitFor(() => ran().length >= 3 || undefined, 10_000, "the three calls that ran");
      expect(ran()).toEqual(["echo a1", "echo b1", "delete_environment b2"]);
    });

    it("another agent process on this machine, with the token, is not covered by this process's session grant", async () => {
      const l = await startListener([NODE, FIXTURES.modern], { args: ["--approval-timeout", "60000"] });
      cleanup.push(() => l.close());
      const seen = new Set<string>();
      const a = await Connection.open(l);
      cleanup.push(() => a.close());
      expect((await a.post(request(1, "server/discover"))).status).toBe(200);
      const a1 = a.post(request(2, "tools/call", { name: "echo", arguments: { text: "a1" } }));
      const pa = await nextStoredRequest(l.stateDir, seen);
      await decideByCli(l.stateDir, "approve", pa.request, "--for", "session");
      expect((await a1).body).toContain("a1");
      // the same tool and arguments from another process, which connects while this one's
      // connection and session are open: it asks a human, for a run of its own
      const body = JSON.stringify(request(1, "tools/call", { name: "echo", arguments: { text: "a1" } }));
      const other = spawn(
        NODE,
        [
          "-e",
          `fetch(${JSON.stringify(l.url)}, { method: "POST", headers: ${JSON.stringify(l.headers())}, body: ${JSON.stringify(body)} }).then(async (r) => process.stdout.write(await r.text()))`,
        ],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      cleanup.push(() => void other.kill("SIGKILL"));
      let out = "";
      other.stdout!.setEncoding("utf8").on("data", (c: string) => {
        out += c;
      });
      // its stdout read to the end, not only its exit: the answer is the last thing it writes
      const exited = exitWithOutput(other, [other.stdout!]);
      const po = await nextStoredRequest(l.stateDir, seen);
      expect(po.tool).toBe("echo");
      expect(po.agentRun).not.toBe(pa.agentRun);
      await waitFor(
        () => l.stderr().includes(`(modern) from pid ${other.pid}`),
        10_000,
        "the other process's session line",
      );
      await decideByCli(l.stateDir, "deny", po.request);
      await exited;
      expect(out).toContain('"error":"approval_denied"');
    });
  },
);
