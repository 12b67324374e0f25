// Two projects of ~/.claude.json with the same entry and no `cwd` (`node server.mjs`): wrap takes
// them for one server and gives both the label "inv", though each project's host starts its own
// server.mjs. Sharing a label shares a name (status, the audit log, the review's "since the last
// approval"), never authority: a grant is bound to the agent run of the gateway that asked and to
// its execution epoch. Here a session approval given to project A's gateway does not cover the
// same call through project B's: B's call waits for its own request, and is refused when that is
// denied. The real CLI in a fake home, each wrapped entry started as the host starts it.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseJsonc } from "jsonc-parser";
import { describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { completeLines } from "../helpers/completeLines.js";
import { capture } from "../helpers/exitWithOutput.js";
import { waitFor } from "../helpers/files.js";
import { hostEnv } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { type FakeUser, fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;

/** A wrapped entry started as Claude Code starts it, in its project, speaking JSON lines. */
function startEntry(entry: Doc, cwd: string) {
  const child: ChildProcessWithoutNullStreams = spawn(entry.command, entry.args, {
    cwd,
    env: hostEnv(),
    stdio: ["pipe", "pipe", "pipe"],
  });
  const { out, err, exited: end } = capture(child);
  // ended once its output is read to the end too: what it said before it exited is all there
  let ended = false;
  const exited = end.then(() => {
    ended = true;
  });
  // only lines written whole: a chunk can end inside an answer's line, after its "id"
  const answerLine = (id: number) => completeLines(out()).find((l) => l.includes(`"id":${id}`));
  const send = (m: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...m })}\n`);
  const answer = async (id: number): Promise<Doc> => {
    await waitFor(() => answerLine(id) !== undefined || ended, 30_000, `the answer ${id}`);
    const line = answerLine(id);
    expect(line, `stderr:\n${err()}`).toBeDefined();
    return JSON.parse(line!);
  };
  send({
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "host", version: "1" } },
  });
  send({ method: "notifications/initialized" });
  return {
    send,
    answer,
    stop: async () => {
      child.kill();
      await exited;
    },
  };
}

/** A project directory with its own server.mjs (the echo fixture, bundled into one file). */
function project(u: FakeUser, name: string): string {
  const dir = join(u.root, name);
  mkdirSync(dir, { recursive: true });
  copyFileSync(FIXTURES.echo, join(dir, "server.mjs"));
  return dir;
}

describe("two projects' identical entries without cwd share a label, not authority", () => {
  it("a session grant approved through project A's gateway does not cover the call through project B's", async () => {
    const u = user();
    const a = project(u, "a");
    const b = project(u, "b");
    const entry = { command: NODE, args: ["server.mjs"] };
    const claude = join(u.home, ".claude.json");
    writeFileSync(
      claude,
      JSON.stringify({
        projects: { [a]: { mcpServers: { inv: entry } }, [b]: { mcpServers: { inv: entry } } },
      }),
    );
    mkdirSync(u.stateDir, { recursive: true, mode: 0o700 });
    const template = newStateDir();
    for (const f of ["keyring.json", "portcullis.db"]) copyFileSync(join(template, f), join(u.stateDir, f));
    for (const dir of [a, b]) {
      const wrap = await u.cli(["wrap", "claude-code"], dir);
      expect(wrap.code, wrap.stderr).toBe(0);
    }
    const doc: Doc = parseJsonc(read(claude));
    const [entryA, entryB] = [doc.projects[a].mcpServers.inv, doc.projects[b].mcpServers.inv];
    // one label for both: wrap takes them for one server
    expect(entryA.args).toEqual(entryB.args);
    expect(entryA.args[entryA.args.indexOf("--label") + 1]).toBe("inv");

    const seen = new Set<string>();
    const gwA = startEntry(entryA, a);
    try {
      gwA.send({ id: 2, method: "tools/call", params: { name: "echo", arguments: { message: "from a" } } });
      const reqA = await nextStoredRequest(u.stateDir, seen);
      expect(reqA.serverLabel).toBe("inv");
      await decideByCli(u.stateDir, "approve", reqA.request, "--for", "session");
      expect((await gwA.answer(2)).result?.content?.[0]?.text).toBe("Echo: from a");

      const gwB = startEntry(entryB, b);
      try {
        gwB.send({ id: 2, method: "tools/call", params: { name: "echo", arguments: { message: "from b" } } });
        // B's call is held for a request of its own: another agent run, another epoch
        const reqB = await nextStoredRequest(u.stateDir, seen);
        expect(reqB.serverLabel).toBe("inv");
        expect(reqB.agentRun).not.toBe(reqA.agentRun);
        expect(reqB.executionEpoch).not.toBe(reqA.executionEpoch);
        // what the two share is the review's "since the last approval": it names B's folder
        expect((reqB as Doc).review.epoch.lastApproved).toBe(reqA.executionEpoch);
        expect((reqB as Doc).review.epoch.summary).toContain(`changed working directory ${realpathSync(b)}`);
        // status lists both under the one label, each with the folder it runs in
        const status = await u.cli(["status"]);
        expect(status.code, status.stderr).toBe(0);
        expect(status.stdout.match(/^inv {2}/gm)).toHaveLength(2);
        for (const dir of [a, b]) expect(status.stdout).toContain(`  directory  ${realpathSync(dir)}\n`);
        await decideByCli(u.stateDir, "deny", reqB.request);
        const answered = await gwB.answer(2);
        expect(answered.result?.content?.[0]?.text).not.toBe("Echo: from b");
        expect(answered.error?.data?.error).toBe("approval_denied");
      } finally {
        await gwB.stop();
      }
    } finally {
      await gwA.stop();
    }
  });
});
