// What a large re-list reuses instead of computing again (session thirty-nine) gives what computing
// it again gives: the diff of two snapshots (kept for the same pair: the record's and the grants'),
// the previous revision's inventory read only when asked for, a revision's fingerprint read alone,
// setOwn's assignment for a key nowhere on the object, isSecretName's answers kept per name.
import { describe, expect, it } from "vitest";
import {
  diffCatalogs,
  getRevision,
  recordRevision,
  revisionFingerprint,
  snapshotOf,
} from "../../src/catalog/index.js";
import { openStore } from "../../src/store/db.js";
import { isSecretName } from "../../src/util/redact.js";
import { setOwn } from "../../src/util/setOwn.js";
import { tempDir } from "../helpers/files.js";

const tool = (name: string, narrow: boolean) => ({
  name,
  inputSchema: {
    type: "object",
    properties: {
      q: narrow ? { type: "string", maxLength: 3 } : { type: "string" },
      api_key: { default: "x" },
    },
  },
});

describe("a diff of two snapshots", () => {
  it("is the diff of their tools, the same for the same pair, another for another pair", () => {
    const a = [tool("a", false), tool("b", false)];
    const b = [tool("a", true), tool("c", false)];
    const sa = snapshotOf(a, 1);
    const sb = snapshotOf(b, 1);
    const once = diffCatalogs(sa, sb);
    expect(once).toEqual(diffCatalogs(a, b));
    expect(diffCatalogs(sa, sb)).toEqual(once);
    const other = snapshotOf([tool("a", false)], 1);
    expect(diffCatalogs(sa, other)).toEqual(diffCatalogs(a, [tool("a", false)]));
    expect(diffCatalogs(sa, other)).not.toEqual(once);
    // a snapshot made again of the same tools is diffed on its own, with the same result
    expect(diffCatalogs(sa, snapshotOf(b, 1))).toEqual(once);
  });
});

describe("a recorded revision", () => {
  it("names the previous one with its inventory and coverage as stored, and its fingerprint alone", () => {
    const db = openStore(tempDir("portcullis-relist-reuse-"));
    try {
      const first = snapshotOf([tool("a", false)], 1);
      const second = snapshotOf([tool("a", true), tool("b", false)], 1);
      expect(recordRevision(db, "s", first, "E1")).toMatchObject({
        revision: 1,
        changed: true,
        previous: null,
      });
      const r = recordRevision(db, "s", second, "E2");
      expect(r).toMatchObject({ revision: 2, changed: true });
      // (with its coverage: what it withheld for entries that could not be fingerprinted, not stored)
      expect(r.previous).toEqual({
        revision: 1,
        fingerprint: first.fingerprint,
        tools: [tool("a", false)],
        coverage: first.coverage,
      });
      expect(JSON.parse(JSON.stringify(r.previous))).toEqual(r.previous);
      expect(recordRevision(db, "s", second, "E3")).toMatchObject({
        revision: 2,
        changed: false,
        previous: null,
      });
      expect(revisionFingerprint(db, "s", 2)).toBe(second.fingerprint);
      expect(revisionFingerprint(db, "s", 2)).toBe(getRevision(db, "s", 2)?.fingerprint);
      expect(revisionFingerprint(db, "s", 3)).toBeNull();
      expect(revisionFingerprint(db, "other", 1)).toBeNull();
    } finally {
      db.close();
    }
  });
});

describe("setOwn", () => {
  it("makes an own, enumerable, writable entry for every key, those Object.prototype has included", () => {
    for (const key of ["plain", "__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "0"]) {
      for (const obj of [{} as Record<string, unknown>, Object.create(null) as Record<string, unknown>]) {
        setOwn(obj, key, { v: key });
        expect(Object.getOwnPropertyDescriptor(obj, key), key).toEqual({
          value: { v: key },
          enumerable: true,
          writable: true,
          configurable: true,
        });
        expect(Object.keys(obj)).toEqual([key]);
        // set again: the entry is replaced, still one
        setOwn(obj, key, 2);
        expect(obj[key]).toBe(2);
        expect(Object.keys(obj)).toEqual([key]);
      }
    }
    const o: Record<string, unknown> = {};
    setOwn(o, "__proto__", { polluted: true });
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("isSecretName, asked again and again", () => {
  it("answers as the first time, past the names it keeps and for long names", () => {
    const names = ["api_key", "apiKey", "query", "author", "authToken", "x-auth-key", "pin", "spin", "limit"];
    const first = names.map(isSecretName);
    expect(first).toEqual([true, true, false, false, true, true, true, false, false]);
    for (let i = 0; i < 10_000; i++) isSecretName(`name_${i}`);
    for (let round = 0; round < 3; round++) expect(names.map(isSecretName)).toEqual(first);
    const long = `${"a".repeat(300)}_password`;
    expect(isSecretName(long)).toBe(true);
    expect(isSecretName(long)).toBe(true);
    expect(isSecretName("a".repeat(300))).toBe(false);
  });
});
