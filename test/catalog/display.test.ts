// What a server's names and text become on a human's screen: nothing invisible, nothing that
// reorders, nothing that drives the terminal, and never two different names that print alike.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { renderTool } from "../../src/approval/review.js";
import { CHECKED_FORMATS } from "../../src/catalog/fieldSummary.js";
import { ArgumentValidator, diffCatalogs, snapshotOf, type Tool } from "../../src/catalog/index.js";
import { displayName, isPlainAscii, quotedName, safeText } from "../../src/catalog/text.js";
import { markInvisible } from "../../src/console/html.js";
import { loadToken, TokenFileError, tokenFileWithoutListen } from "../../src/transport/httpAccess.js";
import { printableJson } from "../../src/util/printableJson.js";

/** Default-ignorable code points, bidi controls, C0 and C1 controls: none may be shown raw. */
const FORBIDDEN = /[\p{Default_Ignorable_Code_Point}\p{Bidi_Control}\p{Cc}]/u;

/** The characters look-alike names are made of, and the ones an escape is spelled with. */
const TRICKY = [
  "\u00ad", // soft hyphen
  "\u034f", // combining grapheme joiner
  "\u115f",
  "\u1160",
  "\u3164",
  "\uffa0", // Hangul fillers
  "\u17b4",
  "\u17b5",
  "\u180b",
  "\u180e",
  "\u200b",
  "\u200d",
  "\u202e",
  "\u2066",
  "\u2069",
  "\u061c",
  "\ufe0f",
  "\ufeff",
  "\u00a0",
  "\u2028",
  "\u{e0001}",
  "\u{e0041}",
  "\u{e007f}",
  "\u{e0100}", // tags, a variation selector beyond the BMP
  "\ud800",
  "\udfff", // lone surrogates
  "\u0000",
  "\u001b",
  "\u009b",
  "\u007f",
  "\\",
  '"',
  "u",
  "{",
  "}",
  "0",
  "a",
  "d",
  "e",
  " ",
  "\u043e",
  // canonically equivalent spellings: drawn alike, a terminal or browser composing them
  "\u0301",
  "\u030a",
  "\u00e9",
  "\u00c5",
  "\u212b",
  "\u1100",
  "\u1161",
  "\uac00",
];

/** Any string: raw UTF-16 (lone surrogates included), or made mostly of the tricky characters. */
const anyString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 24 }),
  fc.string({ unit: "binary-ascii", maxLength: 24 }),
  fc.string({
    unit: fc.oneof(fc.constantFrom(...TRICKY), fc.string({ unit: "binary", minLength: 1, maxLength: 1 })),
    maxLength: 12,
  }),
);

/** Reads a displayed name back: the inverse of displayName, so two names cannot display alike. */
function readBack(shown: string): string {
  if (!shown.startsWith('"')) return shown;
  return shown
    .slice(1, -1)
    .replace(/\\(?:u\{([0-9a-f]+)\}|u([0-9a-f]{4})|(["\\]))/g, (_m, astral, bmp, literal) =>
      literal !== undefined ? literal : String.fromCodePoint(Number.parseInt(astral ?? bmp, 16)),
    );
}

describe("displayed text", () => {
  it("holds no default-ignorable, bidi control or C0/C1 control character, whatever the input", () => {
    fc.assert(
      fc.property(anyString, (s) => {
        expect(safeText(s)).not.toMatch(FORBIDDEN);
        expect(displayName(s)).not.toMatch(FORBIDDEN);
        expect(quotedName(s)).not.toMatch(FORBIDDEN);
        // the console keeps the tabs and line ends of its preformatted blocks, and nothing else
        expect(markInvisible(s).replace(/[\t\n\r]/g, "")).not.toMatch(FORBIDDEN);
      }),
      { numRuns: 2000 },
    );
  });

  it("two different names never display the same: the displayed form reads back to the name", () => {
    fc.assert(
      fc.property(anyString, (s) => {
        expect(readBack(displayName(s))).toBe(s);
        expect(readBack(quotedName(s))).toBe(s);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(anyString, anyString, (a, b) => {
        if (a !== b) expect(displayName(a)).not.toBe(displayName(b));
      }),
      { numRuns: 2000 },
    );
  });

  it("names a terminal draws alike (one a canonical form of the other) display differently", () => {
    // each group is one name as NFC, NFD or a canonical singleton writes it: drawn the same
    const groups = [
      ["caf\u00e9", "cafe\u0301"],
      ["\u00c5", "A\u030a", "\u212b"],
      ["\u03a9", "\u2126"],
      ["\uac00", "\u1100\u1161"],
    ];
    for (const names of groups) {
      const drawn = names.map((n) => displayName(n).normalize("NFC"));
      expect(new Set(drawn).size, JSON.stringify(names)).toBe(names.length);
    }
    // the name in its canonical form keeps its letters; the others are spelled out
    expect(displayName("caf\u00e9")).toBe('"caf\u00e9"');
    expect(displayName("cafe\u0301")).toBe('"cafe\\u0301"');
    expect(displayName("\u212b")).toBe('"\\u212b"');
    fc.assert(
      fc.property(anyString, anyString, (a, b) => {
        if (a !== b) expect(displayName(a).normalize("NFC")).not.toBe(displayName(b).normalize("NFC"));
        const forms = [a, a.normalize("NFC"), a.normalize("NFD"), a.normalize("NFKC")];
        for (const f of forms) expect(readBack(displayName(f))).toBe(f);
        for (const f of forms)
          if (f !== a) expect(displayName(f).normalize("NFC")).not.toBe(displayName(a).normalize("NFC"));
      }),
      { numRuns: 3000 },
    );
  });

  it("the look-alikes of deploy each display differently, and only deploy is plain ASCII", () => {
    const names = [
      "deploy",
      "deploy\u00ad",
      "deploy\u{e0041}\u{e0042}",
      "de\u034fploy",
      "deploy\ufe0f",
      "deploy\u3164",
      "deploy\u180b",
      "depl\u043ey",
      "deploy\\u00ad",
    ];
    const shown = names.map(displayName);
    expect(new Set(shown).size).toBe(names.length);
    expect(shown.slice(0, 3)).toEqual(["deploy", '"deploy\\u00ad"', '"deploy\\u{e0041}\\u{e0042}"']);
    expect(shown.at(-1)).toBe('"deploy\\\\u00ad"');
    expect(names.map(isPlainAscii)).toEqual([true, false, false, false, false, false, false, false, true]);
    expect(safeText("tag twin \u{e0069}\u{e0067}")).toBe("tag twin \\u{e0069}\\u{e0067}");
    expect(markInvisible("deploy\u{e0041}\u00ad")).toBe("deploy⟦U+E0041⟧⟦U+00AD⟧");
  });

  it("a long name is shown by its start, its length and a digest: short, and still told apart", () => {
    const a = `${"x".repeat(3000)}a`;
    const b = `${"x".repeat(3000)}b`;
    const [sa, sb] = [displayName(a), displayName(b)];
    expect(sa).not.toBe(sb);
    expect(sa).toMatch(/^"x{128}…" \(3001 characters, sha256 [0-9a-f]{16}…\)$/);
    expect(sa.length).toBeLessThan(200);
    // up to 128 characters a name is shown whole; a pair is never cut in two
    expect(readBack(displayName("é".repeat(128)))).toBe("é".repeat(128));
    expect(displayName(`${"e".repeat(127)}\u{e0041}${"e".repeat(10)}`)).toMatch(
      /^"e{127}…" \(138 characters/,
    );
  });
});

// The same rule for what the CLI prints of paths: a JSON report (doctor, wrap, status, vault list
// --json) and run's sentences about a token file or a configuration. Seen failing: with
// printableJson returning JSON.stringify's text (C1 controls and bidi overrides raw), and with
// run's sentences naming the path as given (the ESC raw).
describe("printed paths and JSON reports", () => {
  /** A JSON value made of any strings, as keys and as values. */
  const anyJson = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      anyString,
      fc.integer(),
      fc.constant(null),
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(anyString, tie("value"), { maxKeys: 4 }),
    ),
  })).value;

  it("a JSON report holds nothing raw but its own line ends, and reads back to the same value", () => {
    fc.assert(
      fc.property(anyJson, (v) => {
        const text = printableJson(v);
        expect(text.replace(/\n/g, "")).not.toMatch(FORBIDDEN);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 1000 },
    );
  });

  it("run's sentences about a token file or a configuration name the path escaped", () => {
    const stateDir = mkdtempSync(join(tmpdir(), "portcullis-display-"));
    try {
      fc.assert(
        // a NUL is refused by node before any file is looked for (not a path at all)
        fc.property(
          anyString.filter((s) => !s.includes("\0")),
          (s) => {
            const path = join(stateDir, "missing", s);
            expect(() => loadToken(stateDir, "x", path)).toThrow(TokenFileError);
            try {
              loadToken(stateDir, "x", path);
            } catch (e) {
              expect((e as Error).message).not.toMatch(FORBIDDEN);
            }
            const unserved = tokenFileWithoutListen(
              { label: "x", configFile: s, listenTokenFile: "t" },
              undefined,
            );
            expect(unserved).not.toMatch(FORBIDDEN);
          },
        ),
        { numRuns: 500 },
      );
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});

describe("a format the gateway does not check is shown as not checked", () => {
  const tool = {
    name: "send_sms",
    inputSchema: {
      type: "object",
      properties: {
        to: { type: "string", format: "phone" },
        reply_to: { type: "string", format: "email" },
        secret: { type: "string", format: "password" },
        count: { type: "string", format: "int32" },
        port: { type: "integer", format: "int32" },
      },
      required: ["to"],
    },
  };

  it("in the review a human approves, and in a diff that adds one", () => {
    // What the mark says: the gateway lets any string through an unknown format (and ajv-formats'
    // `password`), and checks the ones it knows.
    const v = new ArgumentValidator(snapshotOf([tool as Tool], 1));
    expect(v.validate("send_sms", { to: "not a phone number", secret: "x" }).ok).toBe(true);
    expect(v.validate("send_sms", { to: "x", reply_to: "not an email" }).ok).toBe(false);
    const review = renderTool(tool, "send_sms");
    expect(review).toContain("to: string, format phone (not checked) (required)");
    expect(review).toMatch(/reply_to: string, format email$/m);
    expect(review).toContain("secret: string, format password (not checked)");
    // ajv-formats' int32 checks numbers only: on a string it checks nothing.
    expect(v.validate("send_sms", { to: "x", count: "abc" }).ok).toBe(true);
    expect(v.validate("send_sms", { to: "x", port: 2 ** 40 }).ok).toBe(false);
    expect(review).toContain("count: string, format int32 (not checked)");
    expect(review).toMatch(/port: integer, format int32$/m);
    const before = { ...tool, inputSchema: { type: "object", properties: { to: { type: "string" } } } };
    const after = {
      ...tool,
      inputSchema: { type: "object", properties: { to: { type: "string", format: "phone" } } },
    };
    const change = diffCatalogs([before as Tool], [after as Tool]).entries[0]?.changes[0];
    expect(change?.change).toBe("format tightened (added)");
    expect(change?.detail).toBe('to: format (absent) → "phone" (not checked)');
  });

  it("the formats shown as checked are exactly those ajv-formats checks", async () => {
    const { fullFormats } = (await import("ajv-formats/dist/formats.js")) as unknown as {
      fullFormats: Record<string, unknown>;
    };
    const checked = Object.entries(fullFormats)
      .filter(([, f]) => f !== true)
      .map(([name]) => name);
    expect([...CHECKED_FORMATS].sort()).toEqual(checked.sort());
  });
});
