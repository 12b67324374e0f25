// The console's Audit page opens only the records that can concern the runs it shows
// (src/audit/clearRecords.ts): their gateways' own records, and the records other processes write
// about a run (a human's decision, a lister's expiry and end of a run it judged gone, the next
// gateway's close of a call as gone). Here a page's runs, drawn from those records alone, are the
// runs the full view (every record opened, as `audit sessions` reads them) makes of the whole log,
// call for call, with thirty runs of other writers appended after them.
import { describe, expect, it } from "vitest";
import { storedRunEnds } from "../../src/approval/storedRunEnd.js";
import { type AuditEvent, activityView, openRecords, sessionsView } from "../../src/audit/index.js";
import { AuditLog } from "../../src/audit/log.js";
import { auditData } from "../../src/console/audit.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { redactEvent } from "../../src/util/redact.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

const S = "shop";

describe("the Audit page's records", () => {
  it("make the runs of its page as the whole log makes them: decisions, expiries and closes by other processes included", async () => {
    const stateDir = newStateDir();
    const db = openStore(stateDir);
    try {
      /** One process's records, each in a writer (a process) of its own. */
      const writer = () => AuditLog.open(db, stateDir);
      const gatewayA = writer();
      const call = (run: string, callKey: number) => ({
        run,
        serverLabel: S,
        requestId: callKey,
        callKey,
        tool: "t",
      });
      gatewayA.appendMany([
        { type: "server_started", serverLabel: S, epoch: "A1", reason: "launch" },
        { type: "run_started", run: "R1", serverLabel: S },
        { type: "approval_requested", run: "R1", serverLabel: S, approvalRequest: "q1" },
        { type: "tool_called", ...call("R1", 1), epoch: "A1" },
      ] as AuditEvent[]);
      // a lister judged gateway A gone (its rows edited): the request expired, the run ended
      const lister = writer();
      lister.appendMany([
        { type: "approval_expired", run: "R1", serverLabel: S, approvalRequest: "q1", reason: "gone" },
        { type: "run_ended", run: "R1", serverLabel: S, reason: "gateway_gone" },
      ] as AuditEvent[]);
      lister.close();
      // the next gateway closes A's call as it starts, then serves a run of its own
      const gatewayB = writer();
      gatewayB.appendMany([
        { type: "call_interrupted", ...call("R1", 1), reason: "gateway_gone", outcome: "unknown" },
        { type: "server_started", serverLabel: S, epoch: "B1", reason: "launch" },
        { type: "run_started", run: "R2", serverLabel: S },
        { type: "approval_requested", run: "R2", serverLabel: S, approvalRequest: "q2" },
      ] as AuditEvent[]);
      const approve = writer();
      approve.append({
        type: "approval_granted",
        run: "R2",
        serverLabel: S,
        approvalRequest: "q2",
        grant: "g2",
      });
      approve.close();
      gatewayB.appendMany([
        { type: "tool_called", ...call("R2", 1), epoch: "B1", grant: "g2" },
        { type: "tool_result", ...call("R2", 1), outcome: "ok" },
        { type: "run_ended", run: "R2", serverLabel: S },
      ] as AuditEvent[]);
      gatewayB.close();
      // thirty runs of other writers, each ended, then gateway A, still running, answers its call
      for (let i = 0; i < 30; i++) {
        const w = writer();
        const run = `other-${i}`;
        w.appendMany([
          { type: "run_started", run, serverLabel: S },
          { type: "approval_granted", run, serverLabel: S, grant: `g-${i}` },
          { type: "tool_called", ...call(run, 1) },
          { type: "call_interrupted", ...call(run, 1), reason: "epoch_transition", outcome: "unknown" },
          { type: "run_ended", run, serverLabel: S },
        ] as AuditEvent[]);
        w.close();
      }
      gatewayA.append({ type: "tool_result", ...call("R1", 1), outcome: "ok" });
      gatewayA.close();

      const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
      const all = [...openRecords(db, auditPrivateKey)].map((r) => ({ ...r, event: redactEvent(r.event) }));
      const full = sessionsView(all, storedRunEnds(db));
      const fullCalls = activityView(all);
      // the latest started first: the thirty, then R2, then R1, on the second page
      const first = auditData(db, auditPrivateKey, 0);
      expect(first.opened?.sessions.map((s) => s.run)).toEqual(
        Array.from({ length: 25 }, (_, i) => `other-${29 - i}`),
      );
      const second = auditData(db, auditPrivateKey, 25).opened!;
      expect(second.runs).toBe(32);
      expect(second.sessions.map((s) => s.run)).toEqual([
        "other-4",
        "other-3",
        "other-2",
        "other-1",
        "other-0",
        "R2",
        "R1",
      ]);
      for (const s of second.sessions) expect(s).toEqual(full.find((f) => f.run === s.run));
      const r1 = second.sessions.at(-1)!;
      expect([r1.endReason, r1.callsAfterEnd, r1.approvals.expired, r1.epochs]).toEqual([
        "gateway_gone",
        1,
        1,
        ["A1"],
      ]);
      expect(second.sessions.at(-2)!.approvals.granted).toBe(1);
      const shown = new Set(second.sessions.map((s) => s.run));
      expect(second.activity).toEqual(fullCalls.filter((a) => shown.has(a.run)));
    } finally {
      db.close();
      removeDir(stateDir);
    }
  });
});
