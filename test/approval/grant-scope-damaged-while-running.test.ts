// A session grant's `tool_scope_json` rewritten in the store after a running gateway read it and
// verified it. The gateway keeps its run's grants as last read and covers from that read, so the
// grant goes on covering what it was signed for until the next fresh read: never more. The row as
// rewritten is verified again whenever it is read (the verified-row cache, src/approval/trust.ts,
// is keyed by the digest of what the row says now, not by the grant's id or signature alone), so
// a scope widened to another tool covers nothing, and neither does a scope made unreadable: from
// that fresh read on the grant covers no call, and the gateway says once why (stderr and
// `decision_rejected`). A real gateway before the catalog fixture, the CLI, the store edited by
// another process.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { catalogFile, DEPLOY_TOOL, gatewayFor, TRANSFER_TOOL } from "../console/helpers.js";
import {
  auditEvents,
  decideByCli,
  nextStoredRequest,
  type Pending,
  storedPending,
} from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** What the row is made to say: a second tool named with its real fingerprint, or no JSON at all. */
const DAMAGES = {
  "widened to another tool": (scope: string, transfer: Pending) =>
    JSON.stringify([...JSON.parse(scope), { name: "transfer", fingerprint: transfer.fingerprint }]),
  "made unreadable": () => "{",
} as const;

const REPORTED = {
  "widened to another tool": "its signature does not verify against the pinned approver key",
  "made unreadable": "its row cannot be read (grants.tool_scope_json is not JSON",
} as const;

it.each(Object.keys(DAMAGES) as (keyof typeof DAMAGES)[])(
  "a grant whose tool scope is %s while the gateway runs: covers as signed until the next fresh read, then nothing, and is reported",
  async (damage) => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-scope-damaged-");
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    const record = join(dir, "calls.jsonl");
    const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL, TRANSFER_TOOL]), [], {
      PORTCULLIS_NO_CONSOLE: "1",
      FIXTURE_RECORD: record,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const seen = new Set<string>();
    const call = (name: string, note: string) =>
      gw.client.callTool({ name, arguments: name === "deploy" ? { note } : { to: note } });
    /** A call that must ask a human: its request is denied, and the call refused so. */
    const asksAndIsDenied = async (name: string, note: string) => {
      const answer = call(name, note).catch((e: unknown) => e);
      const asked = await nextStoredRequest(stateDir, seen);
      expect(asked.tool).toBe(name);
      await decideByCli(stateDir, "deny", asked.request);
      expect(String(await answer)).toContain("A human denied this call");
      return asked;
    };
    const atServer = (name: string) => readJsonLines<{ tool: string }>(record).filter((r) => r.tool === name);

    // transfer's request names its fingerprint as the gateway computed it (denied)
    const transfer = await asksAndIsDenied("transfer", "asked once");
    // deploy approved for the session; the next deploy is covered, from a fresh read of the grants
    const first = call("deploy", "approved");
    const asked = await nextStoredRequest(stateDir, seen);
    await decideByCli(stateDir, "approve", asked.request, "--for", "session");
    expect((await first).isError).toBeFalsy();
    expect((await call("deploy", "covered")).isError).toBeFalsy();

    const db = new Database(join(stateDir, "portcullis.db"));
    cleanup.push(() => {
      db.close();
    });
    const row = db
      .prepare("SELECT grant_id, tool_scope_json FROM grants WHERE request = ?")
      .get(asked.request) as {
      grant_id: string;
      tool_scope_json: string;
    };
    db.prepare("UPDATE grants SET tool_scope_json = ? WHERE grant_id = ?").run(
      DAMAGES[damage](row.tool_scope_json, transfer),
      row.grant_id,
    );

    // from the gateway's last read: deploy is still covered as signed, nothing asked
    expect((await call("deploy", "covered from the last read")).isError).toBeFalsy();
    expect(storedPending(stateDir)).toEqual([]);
    // transfer: not in that read, so read afresh; the rewritten row covers nothing (no widening)
    await asksAndIsDenied("transfer", "after the damage");
    // and from that fresh read on, deploy is not covered either
    await asksAndIsDenied("deploy", "after the fresh read");

    expect(atServer("transfer")).toEqual([]);
    expect(atServer("deploy")).toHaveLength(3);
    await gw.close();
    // said once, on stderr and in the audit, with why
    const said = gw
      .stderr()
      .split("\n")
      .filter((l) => l.includes(`grant ${row.grant_id} is not honoured`));
    expect(said, gw.stderr()).toHaveLength(1);
    expect(said[0]).toContain(REPORTED[damage]);
    const rejected = (await auditEvents(stateDir)).filter(
      (e) => e.type === "decision_rejected" && e.grant === row.grant_id,
    );
    expect(rejected).toHaveLength(1);
    expect(String(rejected[0]!.why)).toContain(REPORTED[damage]);
  },
  30_000,
);
