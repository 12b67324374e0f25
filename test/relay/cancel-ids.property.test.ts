// A client's cancellation names its request by the request's id, but JSON lets it spell that id
// otherwise than the request did: "a\/b" is "a/b", "\u00e9" is "é", 1.0 is 1 and 2e1 is 20.
// fast-check spells random ids at random in a request and in its cancellation, among other open
// and ended requests (enough to be swept), and looks for a cancellation that does not name the
// stand-in its request is held under (src/relay/clientIds.ts), or one that names another id's.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClientIds, sameIdKey } from "../../src/relay/clientIds.js";
import { rawRequestIdOf } from "../../src/relay/idScan.js";
import { type Id, parseLine } from "../../src/relay/jsonrpc.js";

const SHORT: Record<number, string> = {
  34: '"',
  92: "\\",
  47: "/",
  8: "b",
  12: "f",
  10: "n",
  13: "r",
  9: "t",
};

/** A JSON string token for `s`, each code unit written as `how` picks (where JSON allows it). */
function spell(s: string, how: number[]): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pick = how[i % how.length]!;
    const mustEscape = c < 0x20 || c === 0x22 || c === 0x5c;
    if (pick === 0 && !mustEscape) out += s[i];
    else if (pick === 1 && SHORT[c] !== undefined) out += `\\${SHORT[c]}`;
    else {
      const hex = c.toString(16).padStart(4, "0");
      out += `\\u${pick === 2 ? hex.toUpperCase() : hex}`;
    }
  }
  return `${out}"`;
}

/** A JSON number token for the integer `digits` (with `sign`), moved into a fraction, padded, exponent. */
function spellNumber(sign: string, digits: string, shift: number, pad: number, e: string): string {
  const s = Math.min(shift, digits.length - 1);
  const int = digits.slice(0, digits.length - s);
  const frac = digits.slice(digits.length - s) + "0".repeat(pad);
  return `${sign}${int}${frac ? `.${frac}` : ""}${s > 0 ? `${e}${s}` : ""}`;
}

const request = (id: string, n: number) =>
  `{"jsonrpc":"2.0","id":${id},"method":"resources/read","params":{"uri":"hang:${n}"}}`;
const cancel = (id: string) =>
  `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"x","requestId":${id}}}`;

/** A client's requests through one ClientIds, as ClientMessages adopts them; some end. */
class Client {
  readonly ids = new ClientIds();
  readonly open = new Set<Id>();
  private n = 0;
  private readonly isOpen = (id: Id) => this.open.has(id);

  request(idText: string): Id {
    const text = request(idText, this.n++);
    const c = this.ids.adopt(parseLine(text), text, undefined, this.isOpen);
    if (c.kind !== "request") throw new Error("not a request");
    this.open.add(c.msg.id);
    return c.msg.id;
  }

  cancel(idText: string): unknown {
    const text = cancel(idText);
    const c = this.ids.adopt(parseLine(text), text, undefined, this.isOpen);
    if (c.kind !== "notification") throw new Error("not a notification");
    return (c.msg.params as { requestId: unknown }).requestId;
  }
}

const spelling = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 8 });
const others = fc.array(fc.tuple(fc.string({ maxLength: 6 }), spelling, fc.boolean()), { maxLength: 150 });

describe("a cancellation names its request whatever either spells", () => {
  it("a string id, among other requests open and ended", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 12 }),
        spelling,
        spelling,
        others,
        (s, a, b, rest) => {
          const client = new Client();
          // requests that came before, some ended (for the sweep); none of them under s
          for (const [o, how, ended] of rest) {
            if (o === s) continue;
            const held = client.request(spell(o, how));
            if (ended) client.open.delete(held);
          }
          const held = client.request(spell(s, a));
          expect(client.cancel(spell(s, b))).toBe(held);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("a number id: 1.0 is 1, 2e1 is 20, but 9007199254740993 is not …992", () => {
    const digits = fc.stringMatching(/^[1-9][0-9]{0,24}$/);
    const form = fc.tuple(
      fc.integer({ min: 0, max: 6 }),
      fc.integer({ min: 0, max: 3 }),
      fc.constantFrom("e", "E", "e+"),
    );
    fc.assert(
      fc.property(fc.constantFrom("", "-"), digits, form, form, (sign, d, [s1, p1, e1], [s2, p2, e2]) => {
        const client = new Client();
        const asked = spellNumber(sign, d, s1, p1, e1);
        const held = client.request(asked);
        expect(client.cancel(spellNumber(sign, d, s2, p2, e2)), `${asked}`).toBe(held);
        // the next integer is another id, even where a double cannot tell them apart
        const next = (BigInt(d) + 1n).toString();
        expect(client.cancel(`${sign}${next}`)).not.toBe(held);
      }),
      { numRuns: 300 },
    );
  });

  it("keys the ids as JSON compares them", () => {
    expect(sameIdKey(1, "1.0")).toBe(sameIdKey(1, "1"));
    expect(sameIdKey(100, "1e2")).toBe(sameIdKey(100, "100.00"));
    expect(sameIdKey(0, "-0")).toBe(sameIdKey(0, "0.0e5"));
    expect(sameIdKey(9007199254740992, "9007199254740993")).not.toBe(
      sameIdKey(9007199254740992, "9007199254740992"),
    );
    expect(sameIdKey("a/b", '"a\\/b"')).toBe(sameIdKey("a/b", '"a/b"'));
    expect(sameIdKey(1, "2")).toBeNull(); // not that number's text
  });

  it("reads params.requestId as JSON.parse does: an escaped key, the last of two, never a nested one", () => {
    expect(rawRequestIdOf('{"params":{"_meta":{"requestId":1},"requestId":"a\\/b"},"method":"x"}')).toBe(
      '"a\\/b"',
    );
    expect(rawRequestIdOf('{"params":{"request\\u0049d":9007199254740993}}')).toBe("9007199254740993");
    expect(rawRequestIdOf('{"params":{"requestId":1,"requestId":2.0}}')).toBe("2.0");
    expect(rawRequestIdOf('{"params":{"requestId":{"x":1}}}')).toBeNull();
    expect(rawRequestIdOf('{"requestId":1,"params":{}}')).toBeNull();
    expect(rawRequestIdOf(' { "params" : { "requestId" : -1e2 } } ')).toBe("-1e2");
  });
});
