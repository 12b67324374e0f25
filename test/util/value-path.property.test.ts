// One printer of where a value lies (src/util/valuePath.ts), for the guard's refusals ("field",
// the validator's style) and for the server's words in a log line or refusal ("member"). Whatever
// the keys (a peer chose them: megabytes long, control characters, lone surrogates, any depth),
// the printed path stays under MAX_PATH_TEXT and holds no raw control character; ordinary paths
// print as each caller printed them before.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_KEY_SHOWN, MAX_PATH_TEXT, pathText } from "../../src/util/valuePath.js";

const CONTROL = /\p{Cc}/u;

const key = fc.oneof(
  fc.string({ unit: "binary", maxLength: 80 }),
  fc.string({ unit: "grapheme-composite", maxLength: 10 }),
  fc.string({
    unit: fc.constantFrom("\n", "\r", "\u001b", "\u0000", "\u007f", "\u0085", "\u009b", "a"),
    maxLength: 200,
  }),
  fc.integer({ min: 0, max: 100_000 }).map((n) => "k".repeat(n)),
  fc.constantFrom("", "a b", "x.y", "__proto__", "\ud83d", "\ud83d\ude00".repeat(40)),
);
const segment = fc.oneof(key, fc.nat({ max: 1_000_000 }));
const path = fc.array(segment, { maxLength: 600 });

describe("pathText", () => {
  it("never exceeds MAX_PATH_TEXT nor holds a raw control character, in either style", () => {
    fc.assert(
      fc.property(path, fc.constantFrom("field" as const, "member" as const), (p, style) => {
        const shown = pathText(p, style);
        expect(shown.length).toBeLessThanOrEqual(MAX_PATH_TEXT);
        expect(shown).not.toMatch(CONTROL);
      }),
      { numRuns: 300 },
    );
  });

  it("a key over the limit is shown cut, with an ellipsis and its length; one at the limit is whole", () => {
    const long = `f${"i".repeat(100_000)}eld`;
    expect(pathText(["a", long], "field")).toBe(
      `a.f${"i".repeat(MAX_KEY_SHOWN - 1)}… (${long.length} characters)`,
    );
    expect(pathText([long], "member")).toBe(
      `[${JSON.stringify(`f${"i".repeat(MAX_KEY_SHOWN - 1)}… (${long.length} characters)`)}]`,
    );
    const atLimit = "k".repeat(MAX_KEY_SHOWN);
    expect(pathText([atLimit], "field")).toBe(atLimit);
    expect(pathText(["x", atLimit], "member")).toBe(`x.${atLimit}`);
  });

  it("prints ordinary paths as the validator and the server-words log did", () => {
    expect(pathText(["items", 0, "price"], "field")).toBe("items[0].price");
    expect(pathText(["notify", "when"], "field")).toBe("notify.when");
    expect(pathText([], "field")).toBe("");
    expect(pathText(["result", "structuredContent", "id"], "member")).toBe("result.structuredContent.id");
    expect(pathText(["params", "data", 1], "member")).toBe("params.data[1]");
    expect(pathText(["a b", 2], "member")).toBe('["a b"][2]');
    expect(pathText([], "member")).toBe("the top");
  });

  it("escapes control characters, DEL and C1 included", () => {
    expect(pathText(["a\nb", "\u001b[31m"], "field")).toBe("a\\u000ab.\\u001b[31m");
    expect(pathText(["x\u0085\u007f"], "member")).toBe('["x\\u0085\\u007f"]');
  });

  it("a path deeper than the limit shows its ends and counts the rest", () => {
    const deep = Array.from({ length: 100 }, (_, i) => `k${i}`);
    const shown = pathText(deep, "field");
    expect(shown.startsWith("k0.k1.")).toBe(true);
    expect(shown).toContain("[… 84 more]");
    expect(shown.endsWith(".k98.k99")).toBe(true);
  });
});
