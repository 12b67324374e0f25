// The nesting limit every message is held to when it is read (src/util/jsonDepth.ts): fast-check
// looks for a JSON value whose depth the check (which stops at the limit) gets wrong against a
// plain recursive count, for a line that parseLine classifies against the limit wrongly (or whose
// id it loses), and for a deep line that the scrubbing of released values lets a value through or
// throws on.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseLine } from "../../src/relay/jsonrpc.js";
import { MAX_MESSAGE_DEPTH, nestsDeeperThan } from "../../src/util/jsonDepth.js";
import { ReleasedValues } from "../../src/vault/scrub.js";

/** Depth as a recursive walk counts it: a bare array or object is 1, a scalar 0. */
function depthOf(v: unknown): number {
  if (typeof v !== "object" || v === null) return 0;
  const children = Array.isArray(v) ? v : Object.values(v);
  return 1 + children.reduce<number>((max, c) => Math.max(max, depthOf(c)), 0);
}

/** A value nested `levels` deep along one path, each level an array or an object (by `kinds`). */
function chain(levels: number, kinds: boolean[], leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = kinds[i % kinds.length] ? [v] : { k: v };
  return v;
}

/** A request whose total depth is `depth`: envelope, params and then arrays. */
function requestOfDepth(depth: number, id: string | number): string {
  const arrays = depth - 2;
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"a":${"[".repeat(arrays)}${"]".repeat(arrays)}}}`;
}

describe("nestsDeeperThan", () => {
  it("agrees with a recursive count on any JSON value and any limit", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (v, limit) => {
        expect(nestsDeeperThan(v, limit)).toBe(depthOf(v) > limit);
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees on one deep path hidden among shallow siblings, at the boundary", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 }),
        fc.integer({ min: -2, max: 2 }),
        (levels, kinds, siblings, offset) => {
          const v = { siblings, deep: chain(levels, kinds, null), more: siblings };
          const limit = Math.max(0, depthOf(v) + offset);
          expect(nestsDeeperThan(v, limit)).toBe(depthOf(v) > limit);
        },
      ),
    );
  });

  it("does not itself run out of stack on a value a million levels deep", () => {
    const deep = JSON.parse(`${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`);
    expect(nestsDeeperThan(deep, MAX_MESSAGE_DEPTH)).toBe(true);
  });
});

describe("parseLine and the limit", () => {
  it("classifies a message of depth ≤ 512 as usual, and a deeper one as too deep with its id", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 3, max: 2000 }),
        fc.oneof(fc.integer({ min: -1e6, max: 1e6 }), fc.string({ maxLength: 10 })),
        (depth, id) => {
          const c = parseLine(requestOfDepth(depth, id));
          if (depth <= MAX_MESSAGE_DEPTH) {
            expect(c.kind).toBe("request");
          } else {
            expect(c).toMatchObject({ kind: "invalid", id, tooDeep: { hasMethod: true } });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a deep response keeps its id and says it has no method; a deep batch has no id", () => {
    const deep = `${"[".repeat(600)}${"]".repeat(600)}`;
    expect(parseLine(`{"jsonrpc":"2.0","id":7,"result":${deep}}`)).toMatchObject({
      kind: "invalid",
      id: 7,
      tooDeep: { hasMethod: false },
    });
    expect(parseLine(`[${deep}]`)).toMatchObject({ kind: "invalid", id: null });
  });
});

describe("scrubbing a deep line", () => {
  it("never throws and never lets the released value through, however the line nests", () => {
    const secret = "s3cr3t-VALUE-0123456789";
    const released = new ReleasedValues();
    released.add("api", secret);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20_000 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
        fc.constantFrom(`"${secret}"`, `"x${secret}y"`, `"${Buffer.from(secret).toString("base64")}"`),
        fc.constantFrom("result", "params"),
        (levels, kinds, leaf, member) => {
          let inner: string = leaf;
          for (let i = 0; i < levels; i++) inner = kinds[i % kinds.length] ? `[${inner}]` : `{"k":${inner}}`;
          const line =
            member === "result"
              ? `{"jsonrpc":"2.0","id":1,"result":${inner}}`
              : `{"jsonrpc":"2.0","method":"n","params":{"v":${inner}}}`;
          const out = released.scrubLine(line);
          expect(out).not.toContain(secret);
          expect(out).not.toContain(Buffer.from(secret).toString("base64"));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("a secret the in-place replacement cannot hide (a bare number, a batch) is still scrubbed when deep", () => {
    const released = new ReleasedValues();
    released.add("api", "987654321987");
    const deep = (inner: string) => `${"[".repeat(50_000)}${inner}${"]".repeat(50_000)}`;
    for (const line of [
      `{"jsonrpc":"2.0","id":1,"result":${deep("987654321987")}}`,
      `[${deep("987654321987")}]`,
    ]) {
      const out = released.scrubLine(line);
      expect(out).not.toContain("987654321987");
    }
  });
});
