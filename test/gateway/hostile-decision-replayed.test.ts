// A human's signed one-call approval, replayed with SQL for the next request of the very same call
// (same run, epoch, tool, arguments): pointed at as it is, or copied into a fresh grant row that
// names the new request. Its signature names the request it was given for, so it decides nothing
// for another: the second call is not forwarded (it waits, or asks a human again), and only a
// human's decision made for it sends it.
// Real gateway before the catalog fixture (whose record of calls is the ground truth), the real
// CLI deciding with the passphrase, a same-user process writing the store.
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { PAY, recordingCatalogGateway } from "../helpers/recordingCatalogGateway.js";

const ARGS = { to: "alice", amount: 10 };

describe.concurrent("a signed one-call approval replayed for another request of the same call", () => {
  for (const how of [
    "the request pointed at the used grant",
    "the grant copied under the new request",
  ] as const) {
    it(`${how}: not honoured, the call waits, the server gets it once`, async ({
      expect,
      onTestFinished,
    }) => {
      const teardown: (() => Promise<void> | void)[] = [];
      onTestFinished(async () => {
        for (const c of teardown.reverse()) await c();
      });
      const { stateDir, gw, received } = await recordingCatalogGateway(
        [PAY],
        ["--label", "bank", "--approval", "per-call", "--approval-timeout", "30000"],
        teardown,
        "portcullis-replay-",
      );
      const db = new Database(join(stateDir, "portcullis.db"));
      db.pragma("busy_timeout = 10000");
      teardown.push(() => {
        db.close();
      });
      const seen = new Set<string>();
      const call = () => gw.client.callTool({ name: "send_payment", arguments: ARGS });

      const first = call();
      const r1 = await nextStoredRequest(stateDir, seen);
      await decideByCli(stateDir, "approve", r1.request, "--for", "call");
      await first;
      expect(received()).toEqual([ARGS]);
      const g1 = db.prepare("SELECT * FROM grants WHERE request = ?").get(r1.request) as Record<
        string,
        unknown
      >;
      expect(g1).toMatchObject({ mode: "per-call", ended_at: expect.any(String) });

      const second = call().then(
        () => "answered",
        (e) => e,
      );
      const r2 = await nextStoredRequest(stateDir, seen);
      let replayed = g1.grant_id as string;
      if (how === "the grant copied under the new request") {
        replayed = "01REPLAYEDGRANT00000000001";
        const cols = Object.keys(g1);
        db.prepare(`INSERT INTO grants (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`).run(
          ...cols.map((c) =>
            c === "grant_id"
              ? replayed
              : c === "request"
                ? r2.request
                : c === "ended_at" || c === "ended_reason"
                  ? null
                  : g1[c],
          ),
        );
      } else {
        db.prepare("UPDATE grants SET ended_at = NULL, ended_reason = NULL WHERE grant_id = ?").run(replayed);
      }
      const r1row = db.prepare("SELECT * FROM approval_requests WHERE request = ?").get(r1.request) as Record<
        string,
        unknown
      >;
      db.prepare(
        "UPDATE approval_requests SET state = 'approved', decided_at = ?, decided_by = ?, decision_for = 'call', grant_id = ? WHERE request = ?",
      ).run(r1row.decided_at, r1row.decided_by, replayed, r2.request);

      await gw.waitForStderr(
        /is not honoured: (it approves another call|its signature does not verify)/,
        20_000,
      );
      expect(received()).toEqual([ARGS]);

      if (how === "the request pointed at the used grant") {
        // this gateway saw that grant consumed by the first call: the call asks a human again, and
        // only the human's decision of that new request sends it
        const r3 = await nextStoredRequest(stateDir, seen);
        expect(received()).toEqual([ARGS]);
        await decideByCli(stateDir, "approve", r3.request, "--for", "call");
        expect(await second).toBe("answered");
        expect(received()).toEqual([ARGS, ARGS]);
      } else {
        // the copy is no decision: the call is still held when the gateway ends, never forwarded
        await gw.close();
        expect(await second).not.toBe("answered");
        expect(received()).toEqual([ARGS]);
      }
    });
  }
});
