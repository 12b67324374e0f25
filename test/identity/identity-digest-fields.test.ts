// The execution record's identityDigest is over every part of the record but the epoch, the pid
// and the start time (docs/identity.md, "What is digested"): a rebuild that changes any one of
// them is a new identity, and a part left out of the digest would let that change pass as the
// same code. Each part is changed alone here, on a record captured from a real project on disk,
// and must move the digest; and each but the label must be named in the "what changed" line
// (changedParts) that status lines and server_replaced records carry.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  captureStaticIdentity,
  changedParts,
  DigestCache,
  type ExecutionRecord,
  finishRecord,
  type ProcessFact,
  type StaticIdentity,
} from "../../src/identity/index.js";
import { makeProject, removeDir, specFor, tempDir } from "./fixtures.js";

const file = (path: string, byte: string) => ({ path, sha256: byte.repeat(64) });

/** Each part of the static identity, set to a value it does not hold in the captured record. */
const CHANGED: { [K in keyof StaticIdentity]-?: (s: StaticIdentity) => StaticIdentity[K] } = {
  serverLabel: (s) => `${s.serverLabel}-other`,
  launchCommand: (s) => [...s.launchCommand, "--flag"],
  executable: (s) => ({ path: s.executable?.path ?? "/usr/bin/node", sha256: "e".repeat(64) }),
  runtime: () => "node 99.0.0",
  entry: (s) => file(s.entry?.path ?? "dist/server.js", "a"),
  wrappers: (s) => [...s.wrappers, file("scripts/start.sh", "b")],
  lockfile: (s) => file(s.lockfile?.path ?? "package-lock.json", "c"),
  dependencyTree: (s) => ({
    root: s.dependencyTree?.root ?? "node_modules",
    files: 1,
    sha256: "d".repeat(64),
  }),
  identityInputs: () => ({ patterns: ["config/**"], files: 1, sha256: "f".repeat(64) }),
  workingDirectory: (s) => `${s.workingDirectory}/elsewhere`,
  envDigest: () => `sha256:${"1".repeat(64)}`,
  configDigest: () => `sha256:${"2".repeat(64)}`,
};

const PROCESS: ProcessFact = {
  pid: 100,
  ppid: 1,
  startTime: "1000",
  exe: "/usr/bin/node",
  argv: ["node", "dist/server.js"],
  exeSha256: "9".repeat(64),
  scripts: [file("dist/server.js", "8")],
};

function record(s: StaticIdentity, live: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return finishRecord(s, {
    epoch: live.epoch ?? "01EPOCHA",
    processId: live.processId ?? 100,
    startedAt: live.startedAt ?? "2026-01-01T00:00:00.000Z",
    processes: live.processes ?? [PROCESS],
  });
}

describe("identityDigest", () => {
  let root: string;
  let captured: StaticIdentity;
  beforeAll(async () => {
    root = tempDir("identity-digest-fields");
    makeProject(root);
    captured = await captureStaticIdentity(specFor(root, "node", ["dist/server.js"]), new DigestCache(null));
  });
  afterAll(() => removeDir(root));

  it("covers every part of the record: each one changed alone is a new digest, named in what changed", () => {
    const base = record(captured);
    const parts = Object.keys(CHANGED) as (keyof StaticIdentity)[];
    // every part the capture fills in is changed by this test (a new part must be added to CHANGED)
    for (const key of Object.keys(captured)) expect(parts, `CHANGED lacks ${key}`).toContain(key);
    for (const key of parts) {
      const value = CHANGED[key](captured);
      expect(value, key).not.toEqual(captured[key]);
      const other = record({ ...captured, [key]: value });
      expect(other.identityDigest, `${key} is not in the identity digest`).not.toBe(base.identityDigest);
      if (key !== "serverLabel") expect(changedParts(base, other), key).not.toEqual([]);
    }
  });

  it("leaves out the epoch, the pid and the start times: a respawn of the same code is the same digest", () => {
    const base = record(captured);
    const respawned = record(captured, {
      epoch: "01EPOCHB",
      processId: 200,
      startedAt: "2026-02-02T00:00:00.000Z",
      processes: [{ ...PROCESS, pid: 200, startTime: "2000" }],
    });
    expect(respawned.identityDigest).toBe(base.identityDigest);
    expect(changedParts(base, respawned)).toEqual([]);
    // what the processes that run are is identity: another program in their place is not the same
    const otherExe = record(captured, { processes: [{ ...PROCESS, exeSha256: "7".repeat(64) }] });
    expect(otherExe.identityDigest).not.toBe(base.identityDigest);
  });
});
