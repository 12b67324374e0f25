// A real gateway in front of a server given a vault value that it returns, and prints to stderr,
// spelled with references and URL escapes escaped twice side by side, where the text around it
// takes one of its characters into a reference of its own (test/fixtures/servers/vaulted.mjs):
// after `&amp`, the value starting with `;` (after-amp-url: `&amp;&#90;%2571…`), and before
// `#xab`, the value ending in `&` (before-hex: `%255A&#x71;…&#x58&#xab`, HTML's parser reading
// the value's `&` into `&#xab`). No reading of the text as a whole holds the value there, while
// the server's spelling of it stays in the text. The client's results, the gateway's stderr and
// the state directory hold neither that spelling nor the value read; before, each reached the
// client (src/vault/referencePattern.ts).
import { describe, it } from "vitest";
import { expectNoFormReachesAnyone } from "./echoLeakKit.js";

/** Each UTF-8 byte of `c` URL-escaped twice, as the fixture writes it. */
const urlTwice = (c: string) =>
  [...Buffer.from(c, "utf8")].map((b) => `%25${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");
const hexRef = (c: string, end: string) => `&#x${c.codePointAt(0)!.toString(16)}${end}`;

/** The value as after-amp-url spells it after `&amp`. */
function afterAmpUrl(v: string): string {
  return [...v].map((c, i) => (i === 0 ? c : i % 2 === 1 ? `&#${c.codePointAt(0)};` : urlTwice(c))).join("");
}

/** The value as before-hex spells it before `#xab`. */
function beforeHex(v: string): string {
  const last = [...v].length - 1;
  return [...v]
    .map((c, i) =>
      i === last ? c : i === last - 1 ? hexRef(c, "") : i % 2 === 1 ? hexRef(c, ";") : urlTwice(c),
    )
    .join("");
}

/** `text` with references with `;` and URL escapes read (twice), as UTF-8 bytes in latin1. */
function read(text: string): string {
  let t = text.replace(/&#([0-9]+);|&#x([0-9a-fA-F]+);/g, (_m, d, h) =>
    String.fromCodePoint(d !== undefined ? Number.parseInt(d, 10) : Number.parseInt(h, 16)),
  );
  t = Buffer.from(t, "utf8").toString("latin1");
  for (let k = 0; k < 2; k++)
    t = t.replace(/%([0-9a-fA-F]{2})/g, (_m, h) => String.fromCharCode(Number.parseInt(h, 16)));
  return t;
}

/** Whether `text` (and its JSON `\"` read) holds `spelled`, or `secret` once read. */
function holds(secret: string, spelled: string): (text: string) => boolean {
  const secret8 = Buffer.from(secret, "utf8").toString("latin1");
  return (text) =>
    [text, text.replace(/\\(["\\/])/g, "$1")].some((t) => t.includes(spelled) || read(t).includes(secret8));
}

describe("a released value spelled with references and URL escapes, text beside it taking one of its characters", () => {
  it("after `&amp`, its `;` taken: reaches neither the client, the gateway's stderr nor the state directory", async () => {
    const secret = ';Zq7"w/+é-token9X';
    await expectNoFormReachesAnyone(secret, ["after-amp-url"], holds(secret, afterAmpUrl(secret)));
  });

  it("before `#xab`, its last `&` taken: reaches neither the client, the gateway's stderr nor the state directory", async () => {
    const secret = 'Zq7"w/+é-token9X&';
    await expectNoFormReachesAnyone(secret, ["before-hex"], holds(secret, beforeHex(secret)));
  });
});
