// `approval.resources` in portcullis.json: the recorded reads (resources/read …) approved by a
// human, with the same requests, CLI, signed decisions and refusals as a tool call. Real gateway,
// real lenient fixture server, decisions made by the real CLI in another process.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function epochOf(stateDir: string): Promise<string | null> {
  const r = await runCli(["status", "--json", "--state-dir", stateDir]);
  return (JSON.parse(r.stdout).gateways as { epoch: string | null }[])[0]?.epoch ?? null;
}

/** A gateway for the lenient server from a portcullis.json with approval.resources set. */
async function readGateway(resources: "session" | "per-call", extra: Record<string, unknown> = {}) {
  const dir = tempDir();
  writeFileSync(join(dir, "marker.txt"), "one");
  const methodLog = join(dir, "methods.jsonl");
  const [command, ...args] = fixtureCommand("lenient");
  const config = {
    servers: {
      lenient: {
        command,
        args,
        env: { FIXTURE_METHOD_LOG: methodLog },
        approval: { default: "none", resources },
        ...extra,
      },
    },
  };
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify(config, null, 2));
  const stateDir = newStateDir();
  const gw = await startGateway({ args: ["lenient"], cwd: dir, stateDir });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  const reads = () =>
    (existsSync(methodLog)
      ? readJsonLines<{ method: string; params: { uri?: string } | null }>(methodLog)
      : []
    )
      .filter((r) => r.method === "resources/read")
      .map((r) => r.params?.uri);
  const read = (uri: string) =>
    gw.client.request({ method: "resources/read", params: { uri } }, ResultSchema);
  return { gw, stateDir, reads, read, dir };
}

describe('approval.resources "session"', () => {
  it("a read waits for a human, is approved with the CLI and reaches the server; the same uri does not ask again, another uri does", async () => {
    const { stateDir, reads, read } = await readGateway("session");
    const seen = new Set<string>();
    const first = read("test://a");
    const req = await nextStoredRequest(stateDir, seen);
    expect(req.tool).toBe("resources/read test://a");
    expect(req.mode).toBe("session");
    // held while the human decides: nothing reached the server
    expect(reads()).toEqual([]);
    // the review renders the pseudo-tool (no input schema) and its target
    const shown = await runCli(["approvals", "--state-dir", stateDir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("resources/read test://a");
    await decideByCli(stateDir, "approve", req.request);
    expect(await first).toMatchObject({ contents: [{ uri: "test://a" }] });
    expect(reads()).toEqual(["test://a"]);

    // the session grant covers the same read again: answered without a new request
    expect(await read("test://a")).toMatchObject({ contents: [{ uri: "test://a" }] });
    expect(reads()).toEqual(["test://a", "test://a"]);
    expect(await pending(stateDir)).toEqual([]);

    // another uri is another target: a human is asked again
    const other = read("test://b");
    const again = await nextStoredRequest(stateDir, seen);
    expect(again.tool).toBe("resources/read test://b");
    expect(reads()).toEqual(["test://a", "test://a"]);
    await decideByCli(stateDir, "approve", again.request);
    expect(await other).toMatchObject({ contents: [{ uri: "test://b" }] });

    // both grants are listed by `portcullis grants`, named by method and target
    const grants = await runCli(["grants", "--json", "--state-dir", stateDir]);
    expect(grants.code).toBe(0);
    expect(grants.stdout).toContain("resources/read test://a");
    expect(grants.stdout).toContain("resources/read test://b");
  });

  it("a new execution epoch makes the session grant stale: refused once, then a human is asked again", async () => {
    const { stateDir, read, dir } = await readGateway("session", {
      identity: { include: ["marker.txt"] },
      onChange: "restart",
    });
    const seen = new Set<string>();
    const first = read("test://a");
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir, seen)).request);
    await first;
    const epochA = await epochOf(stateDir);
    writeFileSync(join(dir, "marker.txt"), "two");
    await waitFor(async () => (await epochOf(stateDir)) !== epochA, 15_000, "a new epoch");
    const stale = (await read("test://a").catch((e: unknown) => e)) as { data: Record<string, unknown> };
    expect(stale.data).toMatchObject({ error: "authorization_stale", approvedEpoch: epochA });
    expect(stale.data.changedTools).toEqual(["resources/read test://a"]);
    const again = read("test://a");
    const req = await nextStoredRequest(stateDir, seen);
    expect(req.tool).toBe("resources/read test://a");
    await decideByCli(stateDir, "approve", req.request);
    expect(await again).toMatchObject({ contents: [{ uri: "test://a" }] });
  });

  it("a denied read gets approval_denied and never reaches the server", async () => {
    const { stateDir, reads, read } = await readGateway("session");
    const denied = read("test://secret").catch((e: unknown) => e as { code: number; data: unknown });
    const req = await nextStoredRequest(stateDir, new Set());
    expect(req.tool).toBe("resources/read test://secret");
    await decideByCli(stateDir, "deny", req.request);
    const e = (await denied) as { code: number; data: Record<string, unknown> };
    expect(e.data).toMatchObject({ error: "approval_denied" });
    expect(reads()).toEqual([]);
  });
});

describe('approval.resources "per-call"', () => {
  it("every read of the same uri asks again", async () => {
    const { stateDir, reads, read } = await readGateway("per-call");
    const seen = new Set<string>();
    for (let i = 1; i <= 2; i++) {
      const r = read("test://a");
      const req = await nextStoredRequest(stateDir, seen);
      expect(req).toMatchObject({ tool: "resources/read test://a", mode: "per-call" });
      await decideByCli(stateDir, "approve", req.request);
      expect(await r).toMatchObject({ contents: [{ uri: "test://a" }] });
      expect(reads()).toHaveLength(i);
    }
  });
});
