// One call at a time: a lone intent is committed inside emitDurable, before the event loop turns,
// instead of waiting for the end of the turn; with another call open, intents still wait for the
// turn's end and share one group. Real store, real audit log (both sync modes).
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
  const sink = auditSink(audit, stderrLogger("test"), new OpenIntents(db, "gateway-a"));
  const stored = () => db.prepare("SELECT count(*) FROM audit_records").pluck().get() as number;
  const openRows = () => db.prepare("SELECT count(*) FROM open_intents").pluck().get() as number;
  return { sink, stored, openRows };
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

describe("a lone intent", () => {
  for (const sync of ["normal", "full"] as const) {
    it(`is committed at once, and grouped again while another call is open (sync ${sync})`, async () => {
      const { sink, stored, openRows } = writer(sync);
      // no call open, nothing queued: in the store (with its open-intents row) when emitDurable returns
      const first = sink.emitDurable(intent(1));
      expect(stored()).toBe(1);
      expect(openRows()).toBe(1);
      expect(await first).toBe(true);

      // call 1 is open: two intents of one turn wait for its end and share one group
      const pair = [sink.emitDurable(intent(2)), sink.emitDurable(intent(3))];
      expect(stored()).toBe(1);
      expect(await Promise.all(pair)).toEqual([true, true]);
      expect(stored()).toBe(3);

      // every call ended (its end written at the turn's end, as before): the next one is lone again
      for (const id of [1, 2, 3]) sink.emit(result(id));
      await turn();
      expect(stored()).toBe(6);
      expect(openRows()).toBe(0);
      const next = sink.emitDurable(intent(4));
      expect(stored()).toBe(7);
      expect(await next).toBe(true);
    });
  }

  it("queued behind another event of the same turn: written with it, at the turn's end, in order", async () => {
    const { sink, stored } = writer("normal");
    sink.emit({ type: "catalog_served", run: "r", serverLabel: "s", revision: 1, fingerprint: "f" });
    const p = sink.emitDurable(intent(1));
    expect(stored()).toBe(0);
    expect(await p).toBe(true);
    expect(stored()).toBe(2);
  });
});
