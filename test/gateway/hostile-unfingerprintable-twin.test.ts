// A server that lists `deploy` with a definition the gateway can fingerprint and again with one it
// cannot: a number past the double range (`1e400`, valid JSON text, which JSON.parse reads as
// Infinity and RFC 8785 cannot write). The second entry was dropped as invalid and the first stayed
// served: the human approved, and the agent saw, one definition while the server might act on the
// other. Now such a name is withheld and its call refused as a name listed with different
// definitions is, and the twin appearing or going is a new revision whose change expands. Real
// gateway, the rawlines fixture (a real process writing the tool list's JSON text as given, read
// from a file at each tools/list), the real CLI, the audit log read back with the test keyring.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";
import { DEPLOY, DEPLOY_1E400, STATUS } from "../helpers/unfingerprintableTools.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Setup {
  gw: RawGateway;
  /** the tool list the server answers with from now on (JSON text, as given) */
  list(entries: string[]): void;
  /** the tools/call requests the server received, by tool name */
  calls(): string[];
}

async function setup(entries: string[], approval: string[] = ["--approval", "none"]): Promise<Setup> {
  const dir = tempDir("portcullis-unfingerprintable-");
  const tools = join(dir, "tools.json");
  const log = join(dir, "raw.log");
  const list = (e: string[]) => writeFileSync(tools, `[${e.join(",")}]`);
  list(entries);
  const gw = rawGateway({
    args: ["--label", "twin", ...approval, "--", ...fixtureCommand("rawlines")],
    env: { FIXTURE_RAW_LOG: log, FIXTURE_RAW_TOOLS_FILE: tools },
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  await gw.initialize();
  const calls = () => {
    let text = "";
    try {
      text = readFileSync(log, "utf8");
    } catch {
      return [];
    }
    return text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(JSON.parse(l) as string) as { method?: string; params?: { name?: string } })
      .filter((m) => m.method === "tools/call")
      .map((m) => String(m.params?.name));
  };
  return { gw, list, calls };
}

async function listedNames(gw: RawGateway): Promise<string[]> {
  const r = await gw.request("tools/list");
  expect(r.error, JSON.stringify(r.error)).toBeUndefined();
  return (r.result as { tools: { name: string }[] }).tools.map((t) => t.name);
}

function refusalOf(r: { error?: unknown }) {
  return r.error as { code: number; message: string; data: Record<string, unknown> };
}

/** The server's list changes and it says so; resolves once the client is told (the new revision served). */
async function relisted(s: Setup, entries: string[]): Promise<void> {
  s.list(entries);
  const told = s.gw.messages().filter((m) => m.method === "notifications/tools/list_changed").length;
  const sent = await s.gw.request("raw/send", {
    lines: ['{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'],
  });
  expect(sent.error, JSON.stringify(sent.error)).toBeUndefined();
  await waitFor(
    () =>
      s.gw.messages().filter((m) => m.method === "notifications/tools/list_changed").length > told ||
      undefined,
    20_000,
    "the client told the tool list changed",
  );
}

describe("a tool name listed beside a definition the gateway cannot fingerprint (1e400)", () => {
  it("is not served, and its call is refused saying so, never reaching the server", async () => {
    const s = await setup([DEPLOY, STATUS, DEPLOY_1E400]);
    expect(await listedNames(s.gw)).toEqual(["status"]);
    const err = refusalOf(
      await s.gw.request("tools/call", { name: "deploy", arguments: { target: "preview" } }),
    );
    expect(err.code).toBe(-32055);
    expect(err.message).toBe(
      'The server lists the tool "deploy" 2 times, 1 of them with a definition portcullis cannot fingerprint (a number beyond the double range, such as 1e400, or nesting too deep), so portcullis does not serve it: nobody can tell which definition the server would run.',
    );
    expect(err.data).toMatchObject({
      error: "tool_not_in_catalog",
      tool: "deploy",
      currentRevision: 1,
      listed: 2,
      definitions: 1,
      unfingerprintable: 1,
      reason: "tool listed more than once with different definitions",
    });
    expect(String(err.data.retry)).toContain("with a definition portcullis can fingerprint");
    const status = await s.gw.request("tools/call", { name: "status", arguments: {} });
    expect(status.error, JSON.stringify(status.error)).toBeUndefined();
    expect(s.calls()).toEqual(["status"]);
    // catalog show names it as not served, with the definition it could fingerprint
    const shown = await runCli(["catalog", "show", "twin", "--state-dir", s.gw.stateDir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(
      "listed also with a definition portcullis cannot fingerprint (NOT served, calls refused until the server lists each once with one it can): deploy",
    );
    expect(shown.stdout).toContain(
      "deploy: NOT SERVED, listed 2 times, 1 of them with a definition portcullis cannot fingerprint:",
    );
    expect(shown.stdout).toContain(
      "(and 1 entry portcullis cannot fingerprint: dropped, not stored, not shown)",
    );
    const json = JSON.parse(
      (await runCli(["catalog", "show", "twin", "--json", "--state-dir", s.gw.stateDir])).stdout,
    );
    expect(json.tools.map((t: { tool: { name: string } }) => t.tool.name)).toEqual(["status"]);
    expect(json.ambiguous).toEqual([
      expect.objectContaining({
        name: "deploy",
        listed: 2,
        unfingerprintable: 1,
        definitions: [expect.anything()],
      }),
    ]);
    expect(json.coverage).toMatchObject({
      ambiguousNames: ["deploy"],
      unfingerprintable: [{ name: "deploy", entries: 1 }],
      invalid: [{ index: 2, reason: "cannot be fingerprinted (canonical JSON: non-finite number)" }],
    });
    // catalog list counts the tools served (status)
    const list = await runCli(["catalog", "list", "twin", "--json", "--state-dir", s.gw.stateDir]);
    expect(JSON.parse(list.stdout)).toMatchObject({ revisions: [{ revision: 1, tools: 1 }] });
  });

  it("appearing beside a served tool, and going, is each a new revision that expands, recorded and told", async () => {
    const s = await setup([DEPLOY, STATUS]);
    expect(await listedNames(s.gw)).toEqual(["deploy", "status"]);
    const ok = await s.gw.request("tools/call", { name: "deploy", arguments: { target: "preview" } });
    expect(ok.error, JSON.stringify(ok.error)).toBeUndefined();
    // the twin appears: revision 2, deploy withheld and refused
    await relisted(s, [DEPLOY, STATUS, DEPLOY_1E400]);
    const err = refusalOf(
      await s.gw.request("tools/call", { name: "deploy", arguments: { target: "preview" } }),
    );
    expect(err.data).toMatchObject({
      error: "tool_not_in_catalog",
      currentRevision: 2,
      unfingerprintable: 1,
    });
    expect(await listedNames(s.gw)).toEqual(["status"]);
    const human = (await runCli(["catalog", "diff", "twin", "--state-dir", s.gw.stateDir])).stdout;
    expect(human).toContain("catalog revision 1 → 2: 0 added, 0 removed, 1 modified — EXPANDS authority");
    expect(human).toContain(
      "now listed 2 times, 1 of them with a definition portcullis cannot fingerprint: not served, its calls refused",
    );
    expect(human).toContain("and 1 entry portcullis cannot fingerprint (dropped, not stored)");
    // the twin goes: revision 3, deploy served again, a change that expands
    await relisted(s, [DEPLOY, STATUS]);
    expect(await listedNames(s.gw)).toEqual(["deploy", "status"]);
    const again = await s.gw.request("tools/call", { name: "deploy", arguments: { target: "preview" } });
    expect(again.error, JSON.stringify(again.error)).toBeUndefined();
    expect(s.calls()).toEqual(["deploy", "deploy"]);
    const diff = JSON.parse(
      (await runCli(["catalog", "diff", "twin", "2", "3", "--json", "--state-dir", s.gw.stateDir])).stdout,
    );
    expect(diff.expands).toBe(true);
    expect(diff.entries).toEqual([
      expect.objectContaining({ kind: "modified", tool: "deploy", classification: "expands" }),
    ]);
    // each revision recorded, with the change the gateway judged
    const revised = (await auditEvents(s.gw.stateDir)).filter((e) => e.type === "catalog_revised");
    expect(revised.map((e) => e.revision)).toEqual([1, 2, 3]);
    const [first, withTwin, without] = revised as {
      fingerprint: string;
      coverage: Record<string, unknown>;
      diff: { expands: boolean; entries: { tool: string; changes: { change: string }[] }[] } | null;
    }[];
    expect(new Set([first?.fingerprint, withTwin?.fingerprint, without?.fingerprint]).size).toBe(2);
    expect(without?.fingerprint).toBe(first?.fingerprint);
    expect(Object.hasOwn(first?.coverage ?? {}, "unfingerprintable")).toBe(false);
    expect(withTwin?.coverage.unfingerprintable).toEqual([{ name: "deploy", entries: 1 }]);
    expect(withTwin?.diff?.expands).toBe(true);
    expect(without?.diff?.expands).toBe(true);
    expect(without?.diff?.entries[0]?.changes[0]?.change).toBe(
      "listed with one definition again (1 time): served",
    );
  });

  it("a session grant of deploy ends when the twin appears within the epoch, and once it goes a human is asked anew", async () => {
    const s = await setup([DEPLOY, STATUS], ["--approval-timeout", "30000"]);
    const stateDir = s.gw.stateDir;
    expect(await listedNames(s.gw)).toEqual(["deploy", "status"]);
    const pending = async () => {
      const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
      return (JSON.parse(r.stdout) as { requests: { request: string; tool: string }[] }).requests;
    };
    const call = () =>
      s.gw.request("tools/call", { name: "deploy", arguments: { target: "preview" } }, 40_000);
    // approved for the session, and called again under the grant
    const first = call();
    const req = await waitFor(async () => (await pending())[0] ?? null, 20_000, "an approval request");
    const approved = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(approved.code).toBe(0);
    expect((await first).error).toBeUndefined();
    expect((await call()).error).toBeUndefined();
    expect(s.calls()).toEqual(["deploy", "deploy"]);
    // the twin appears: refused, the grant notwithstanding
    await relisted(s, [DEPLOY, STATUS, DEPLOY_1E400]);
    expect(refusalOf(await call()).data).toMatchObject({
      error: "tool_not_in_catalog",
      unfingerprintable: 1,
    });
    expect(await listedNames(s.gw)).toEqual(["status"]);
    // it goes, deploy listed as approved: the grant did not carry over, a human is asked
    await relisted(s, [DEPLOY, STATUS]);
    expect(await listedNames(s.gw)).toEqual(["deploy", "status"]);
    const again = call();
    const next = await waitFor(
      async () => (await pending()).find((p) => p.request !== req.request) ?? null,
      20_000,
      "a new approval request",
    );
    expect(next.tool).toBe("deploy");
    await runCli(["deny", next.request, "--state-dir", stateDir], { env: passphraseEnv() });
    expect(refusalOf(await again).data).toMatchObject({ error: "approval_denied" });
    expect(s.calls()).toEqual(["deploy", "deploy"]);
  }, 90_000);
});
