// The gateway's own row (start, state, heartbeat, status lines) is committed without an fsync;
// an epoch's row, and whatever is written with it, waits for the disk as before; the
// connection's synchronous setting, which the audit log's durability rests on, is put back.
import { afterEach, describe, expect, it } from "vitest";
import { GatewayRegistry } from "../../src/gateway/registry.js";
import type { ExecutionRecord } from "../../src/identity/index.js";
import { openStore, type Store } from "../../src/store/db.js";
import { tempDir } from "../helpers/files.js";

const log = { warn: () => {}, info: () => {} };
let db: Store | null = null;
afterEach(() => {
  db?.close();
  db = null;
});

/** The synchronous level each registry transaction ran at, in order. */
function watchLevels(store: Store): number[] {
  const levels: number[] = [];
  const transaction = store.transaction.bind(store);
  store.transaction = ((fn: (...a: unknown[]) => unknown) =>
    transaction((...a: unknown[]) => {
      levels.push(Number(store.pragma("synchronous", { simple: true })));
      return fn(...a);
    })) as Store["transaction"];
  return levels;
}

const record = {
  epoch: "01JEPOCH0000000000000000AA",
  identityDigest: "sha256:00",
  launchCommand: ["node", "server.mjs"],
  processes: [],
  processId: 1,
  startedAt: new Date().toISOString(),
} as unknown as ExecutionRecord;

describe("gateway registry: what waits for the disk", () => {
  it("commits its own row at NORMAL and an epoch's row, with the state written beside it, at FULL", () => {
    db = openStore(tempDir());
    const levels = watchLevels(db);
    const registry = new GatewayRegistry(db, "01JGATEWAY0000000000000000", "s", log);
    registry.recordEpoch(record, "launch", { state: "identity-pending", epoch: record.epoch, record });
    registry.update({ state: "up" });
    registry.statusLine("serving");
    // NORMAL is 1, FULL 2: one transaction for the epoch's row and the state it brings
    expect(levels).toEqual([1, 2, 1, 1]);
    expect(Number(db.pragma("synchronous", { simple: true }))).toBe(2);
    const row = db.prepare("SELECT state, epoch FROM gateways").get() as { state: string; epoch: string };
    expect(row).toEqual({ state: "up", epoch: record.epoch });
    const epoch = db.prepare("SELECT reason, identity_digest FROM epochs").get();
    expect(epoch).toEqual({ reason: "launch", identity_digest: "sha256:00" });
  });

  it("leaves a connection at NORMAL (--audit-sync normal) as it is", () => {
    db = openStore(tempDir());
    db.pragma("synchronous = NORMAL");
    const levels = watchLevels(db);
    const registry = new GatewayRegistry(db, "01JGATEWAY0000000000000001", "s", log);
    registry.update({ state: "up" });
    expect(levels).toEqual([1, 1]);
    expect(Number(db.pragma("synchronous", { simple: true }))).toBe(1);
  });
});
