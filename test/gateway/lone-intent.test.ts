// One call at a time: a lone intent is committed as soon as the microtasks already queued have run,
// before the end of the event loop's turn; calls decided in step still share its group, and with
// another call open, intents wait for the turn's end and share one group, as before. Real store,
// real audit log (both sync modes).
import { afterEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import { OpenIntents } from "../../src/gateway/openIntents.js";
import { openStore } from "../../src/store/db.js";
import { stderrLogger } from "../../src/util/log.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

function writer(sync: "full" | "normal") {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const db = openStore(stateDir);
  const audit = AuditLog.open(db, stateDir, { sync });
  cleanup.push(() => {
    audit.close();
    db.close();
  });
  // counts the writer's transactions (each appendIf is one), the log itself untouched
  let appends = 0;
  const appendIf = audit.appendIf.bind(audit);
  audit.appendIf = (items, opts) => {
    appends++;
    return appendIf(items, opts);
  };
  const sink = auditSink(audit, stderrLogger("test"), new OpenIntents(db, "gateway-a"));
  const stored = () => db.prepare("SELECT count(*) FROM audit_records").pluck().get() as number;
  const openRows = () => db.prepare("SELECT count(*) FROM open_intents").pluck().get() as number;
  return { sink, stored, openRows, transactions: () => appends };
}

const intent = (requestId: number) => ({
  type: "tool_called",
  run: "r",
  serverLabel: "s",
  requestId,
  tool: "echo",
  epoch: "e",
});
const result = (requestId: number) => ({
  type: "tool_result",
  run: "r",
  serverLabel: "s",
  requestId,
  tool: "echo",
  epoch: "e",
  outcome: "ok",
});
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** The number of records in the store as seen by a callback at the end of the current turn. */
function atTurnEnd(stored: () => number): Promise<number> {
  return new Promise((resolve) => setImmediate(() => resolve(stored())));
}

describe("a lone intent", () => {
  for (const sync of ["normal", "full"] as const) {
    it(`is committed before the turn ends, and grouped again while another call is open (sync ${sync})`, async () => {
      const { sink, stored, openRows, transactions } = writer(sync);
      // no call open, nothing queued: in the store (with its open-intents row) before the turn's end
      const seen = atTurnEnd(stored);
      const first = sink.emitDurable(intent(1));
      expect(await first).toBe(true);
      expect(await seen).toBe(1);
      expect(openRows()).toBe(1);

      // call 1 is open: two intents of one turn wait for the turn's end and share one group
      const before = transactions();
      const seenNow = atTurnEnd(stored);
      const pair = [sink.emitDurable(intent(2)), sink.emitDurable(intent(3))];
      expect(await seenNow).toBe(1);
      expect(await Promise.all(pair)).toEqual([true, true]);
      expect(stored()).toBe(3);
      expect(transactions() - before).toBe(1);

      // every call ended (its end written at the turn's end, as before): the next one is lone again
      for (const id of [1, 2, 3]) sink.emit(result(id));
      await turn();
      expect(stored()).toBe(6);
      expect(openRows()).toBe(0);
      const seenNext = atTurnEnd(stored);
      expect(await sink.emitDurable(intent(4))).toBe(true);
      expect(await seenNext).toBe(7);
    });
  }

  it("calls decided in step (one read from the client) still share one group", async () => {
    const { sink, stored, transactions } = writer("normal");
    const before = transactions();
    // each intent emitted from a microtask of its own, as when several calls are decided together
    const all = await Promise.all(
      [1, 2, 3].map((id) => Promise.resolve().then(() => sink.emitDurable(intent(id)))),
    );
    expect(all).toEqual([true, true, true]);
    expect(stored()).toBe(3);
    expect(transactions() - before).toBe(1);
  });

  it("queued behind another event of the same turn: written with it, at the turn's end, in order", async () => {
    const { sink, stored } = writer("normal");
    const seen = atTurnEnd(stored);
    sink.emit({ type: "catalog_served", run: "r", serverLabel: "s", revision: 1, fingerprint: "f" });
    const p = sink.emitDurable(intent(1));
    expect(await seen).toBe(0);
    expect(await p).toBe(true);
    expect(stored()).toBe(2);
  });
});
