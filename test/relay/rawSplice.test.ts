import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseLine } from "../../src/relay/jsonrpc.js";
import { plainIdSpan, serializeWithId, spliceId, writtenIdOf } from "../../src/relay/rawSplice.js";

// The fast path (the line as written, id spliced) against the slow path (parse, replace the id,
// stringify): for any message, the same message after one parse, or no fast path at all.

const WIRE = 4242;

/** the slow path: what the gateway writes when it re-serialises */
function slow(text: string): string {
  return JSON.stringify({ ...(JSON.parse(text) as object), id: WIRE });
}

/** the fast path's output, brought to the slow path's form by one parse and stringify */
function fastNormalised(text: string): string | null {
  const span = plainIdSpan(text);
  if (span === null) return null;
  return JSON.stringify(JSON.parse(spliceId(text, span, String(WIRE))));
}

/**
 * spacing between tokens: a carriage return or a line feed (a pretty-printed body from an HTTP
 * upstream) is rare, so most messages can take the fast path
 */
const space = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom("", " ", "  ", "\t") },
  { weight: 1, arbitrary: fc.constantFrom("\r", " \r ", "\n", " \n  ", "\r\n") },
);
const plainKey = fc.constantFrom("id", "method", "jsonrpc", "params", "result", "error", "x", "Id", "ıd");
const escapedKey = fc.constantFrom("\\u0069d", "i\\u0064", "\\u006dethod", 'a\\"b', "\\\\");
const idValue = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom("9007199254740993", "1.0", "-0", "1e3", "1E+2", '"a\\u0041"', '""', '"\\"x"'),
  fc.string().map((s) => JSON.stringify(s)),
);
/** any JSON value, written with odd spacing (a tab or a carriage return between tokens) */
const jsonText: fc.Arbitrary<string> = fc
  .tuple(fc.jsonValue({ maxDepth: 3 }), space)
  .map(([v, sp]) => (JSON.stringify(v, null, sp.includes("\t") ? "\t" : 1) ?? "null").replace(/\n/g, sp));

interface Member {
  key: string;
  escaped: boolean;
  value: string;
}
const member: fc.Arbitrary<Member> = fc.oneof(
  fc.record({ key: plainKey, escaped: fc.constant(false), value: fc.oneof(idValue, jsonText) }),
  fc.record({ key: escapedKey, escaped: fc.constant(true), value: fc.oneof(idValue, jsonText) }),
);

/** a message as a client or server would write it: distinct keys, an id, in any order */
const plainMembers: fc.Arbitrary<Member[]> = fc
  .tuple(
    idValue,
    fc.uniqueArray(
      plainKey.filter((k) => k !== "id"),
      { maxLength: 5 },
    ),
    fc.array(jsonText, { minLength: 5, maxLength: 5 }),
    fc.nat(5),
  )
  .map(([id, keys, values, at]) => {
    const members: Member[] = keys.map((key, i) => ({ key, escaped: false, value: values[i]! }));
    members.splice(Math.min(at, members.length), 0, { key: "id", escaped: false, value: id });
    return members;
  });

const message = fc
  .tuple(
    fc.oneof(plainMembers, fc.array(member, { maxLength: 6 })),
    fc.array(space, { minLength: 30, maxLength: 30 }),
  )
  .map(([members, sp]) => {
    let k = 0;
    const s = () => sp[k++ % sp.length]!;
    const body = members.map((m) => `${s()}"${m.key}"${s()}:${s()}${m.value}${s()}`).join(",");
    return { members, text: `${s()}{${body}}${s()}` };
  });

/** whether the fast path must take this message: what `plainIdSpan` promises */
function expectFast(members: Member[], text: string): boolean {
  const keys = members.map((m) => m.key);
  if (new Set(keys).size !== keys.length || members.some((m) => m.escaped)) return false;
  const id = members.find((m) => m.key === "id");
  if (!id || !/^["\-0-9]/.test(id.value)) return false;
  // a line break anywhere outside a string (strings here never hold a raw one): spliced as it is,
  // it would end the line over stdio
  return !/[\r\n]/.test(text);
}

describe("relaying a line as written (rawSplice)", () => {
  it("gives the slow path's message, or falls back, for arbitrary messages", () => {
    let fastTaken = 0;
    let fellBack = 0;
    fc.assert(
      fc.property(message, ({ members, text }) => {
        let valid = true;
        try {
          JSON.parse(text);
        } catch {
          valid = false;
        }
        if (!valid) return; // refused before any path is chosen (parseLine)
        const fast = fastNormalised(text);
        expect(fast !== null, text).toBe(expectFast(members, text));
        if (fast !== null) expect(fast).toBe(slow(text));
        if (fast !== null) fastTaken++;
        else fellBack++;
      }),
      { numRuns: 3000 },
    );
    // both paths were exercised, so the comparison above can fail
    expect(fastTaken).toBeGreaterThan(100);
    expect(fellBack).toBeGreaterThan(100);
  });

  it("never takes an escaped or repeated top-level key, or a line break between tokens", () => {
    for (const text of [
      '{"jsonrpc":"2.0","id":1,"method":"ping","\\u0069d":2}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"ping"}',
      '{"jsonrpc":"2.0","id":1,"\\u006dethod":"tools/call","method":"ping"}',
      '{"jsonrpc":"2.0","id":1,"method":"ping","params":{\r"a":1}}',
      '{"jsonrpc":"2.0",\r"id":1,"method":"ping"}',
      '{"jsonrpc":"2.0","id":1,"method":"ping"}\r',
      '{\n  "jsonrpc": "2.0",\n  "id": 1,\n  "result": {}\n}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":\n1}}',
      '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}',
      '{"jsonrpc":"2.0","id":null,"method":"ping"}',
      '{"jsonrpc":"2.0","method":"ping"}',
    ]) {
      expect(plainIdSpan(text), text).toBeNull();
    }
  });

  it("keeps everything but the id as written, and the id exactly as given", () => {
    const text =
      '{ "jsonrpc": "2.0", "method": "ping", "params": {"n": 1.50, "s": "\\u0041"}, "id": 9007199254740993 }';
    const span = plainIdSpan(text)!;
    expect(text.slice(span.start, span.end)).toBe("9007199254740993");
    expect(spliceId(text, span, "7")).toBe(
      '{ "jsonrpc": "2.0", "method": "ping", "params": {"n": 1.50, "s": "\\u0041"}, "id": 7 }',
    );
    const back = '{"jsonrpc":"2.0","id":7,"result":{}}';
    const s2 = plainIdSpan(back)!;
    expect(spliceId(back, s2, '"a\\u0041"')).toBe('{"jsonrpc":"2.0","id":"a\\u0041","result":{}}');
  });

  it("is only reached by what parseLine accepts (arbitrary text)", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const c = parseLine(text);
        if (c.kind === "invalid") return; // refused exactly as before: no path at all
        const fast = fastNormalised(text);
        if (fast !== null) expect(fast).toBe(slow(text));
      }),
      { numRuns: 2000 },
    );
  });

  it("an answer under a server's id as written: that text back, everything else as parsed", () => {
    fc.assert(
      fc.property(
        message,
        fc.oneof(idValue, fc.constant('"long-'.concat("\\u00e9".repeat(400), '"'))),
        ({ text }, idText) => {
          let parsed: { id?: unknown };
          try {
            parsed = JSON.parse(text) as { id?: unknown };
          } catch {
            return;
          }
          if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return;
          const out = serializeWithId({ ...parsed, id: 0 }, idText);
          // every other member as re-serialising writes it (the slow path's -0 is 0)
          const rest = JSON.parse(JSON.stringify(parsed)) as object;
          expect(JSON.parse(out)).toEqual({ ...rest, id: JSON.parse(idText) });
          // the id is written first, whatever the other keys are
          expect(out.startsWith(`{"id":${idText}`)).toBe(true);
          // read back from what was written, the same text (a key with an escape leaves only the
          // id scanner, which reads ids up to 1 KiB)
          const span = plainIdSpan(out);
          if (span) expect(out.slice(span.start, span.end)).toBe(idText);
          if (span || idText.length <= 1024)
            expect(writtenIdOf(out, JSON.parse(idText) as number | string)).toBe(idText);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("reads an id's written text only when it is of the parsed value", () => {
    const id = (t: string) => writtenIdOf(t, (JSON.parse(t) as { id: number | string }).id);
    expect(id('{"jsonrpc":"2.0","id":1e2,"method":"ping"}')).toBe("1e2");
    // line breaks between tokens: the scanner finds it
    expect(id('{"jsonrpc":"2.0",\n"id" : -0,\n"method":"ping"}')).toBe("-0");
    // two ids: JSON.parse keeps the last; the first one's text is not of that value
    expect(id('{"jsonrpc":"2.0","id":1.0,"\\u0069d":2,"method":"ping"}')).toBe("2");
    expect(id('{"jsonrpc":"2.0","id":"a","method":"ping"}')).toBe('"a"');
  });
});
