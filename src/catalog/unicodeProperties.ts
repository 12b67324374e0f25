/**
 * The code points of a Unicode property escape (`\p{L}`, `\p{Script=Greek}`, `\p{Alphabetic}`…)
 * as this process's JavaScript engine reads it, as sorted code-point ranges, so that a pattern
 * rewritten for the linear-time engine (linearRegex.ts) matches exactly what JavaScript's RegExp
 * would. RE2 has Unicode tables of its own, of another Unicode version: they are never used.
 *
 * Asking JavaScript code point by code point (1.1 million `test()` calls) took 30 to 100 ms a
 * property. Here JavaScript's own regex engine walks strings that hold every code point once and
 * reports where the property starts and stops: a search for the next code point inside it, then
 * for the next one outside it, so each step skips a whole run. The astral planes are walked one
 * plane at a time with the property intersected with that plane (the `v` flag's `&&`): V8's
 * matcher for a large astral class is slow, for one plane's share of it fast.
 * docs/performance-history.md ("Patterns: which linear-time engine") has the measurements.
 */

import { Buffer } from "node:buffer";
import { endianness } from "node:os";

/** Sorted, merged, non-overlapping `[first, last]` code points. */
export type PropertyRanges = readonly (readonly [number, number])[];

/** A string holding the code points `first` to `last`, each `width` UTF-16 units long. */
interface Segment {
  text: string;
  first: number;
  last: number;
  width: 1 | 2;
}

const BIG_ENDIAN = endianness() === "BE";

/** UTF-16 code units to a string, byte for byte (lone surrogates kept, as TextDecoder would not). */
function fromUnits(units: Uint16Array): string {
  const bytes = Buffer.from(units.buffer, units.byteOffset, units.byteLength);
  if (BIG_ENDIAN) bytes.swap16();
  return bytes.toString("utf16le");
}

/** Code units first..last, one each: BMP code points, or lone surrogates (none pairs with its neighbour). */
function bmpSegment(first: number, last: number): Segment {
  const units = new Uint16Array(last - first + 1);
  for (let i = 0; i < units.length; i++) units[i] = first + i;
  return { text: fromUnits(units), first, last, width: 1 };
}

/** Plane `p` (1 to 16): its 65,536 code points as surrogate pairs, in order. */
function planeSegment(p: number): Segment {
  // One 32-bit word a pair: half the writes of one unit at a time.
  const words = new Uint32Array(0x10000);
  const firstLead = 0xd800 + ((p - 1) << 6);
  for (let i = 0; i < 0x10000; i++) {
    const lead = firstLead + (i >> 10);
    const trail = 0xdc00 + (i & 0x3ff);
    words[i] = BIG_ENDIAN ? lead * 0x10000 + trail : trail * 0x10000 + lead;
  }
  const text = Buffer.from(words.buffer).toString("utf16le");
  return { text, first: p * 0x10000, last: p * 0x10000 + 0xffff, width: 2 };
}

/**
 * Every code point once, about 4 MB of strings: built on the first property escape, and held
 * only weakly, so the garbage collector may take them back once the properties of the moment are
 * spelled out (a pattern's properties, all computed within one synchronous compile, share them).
 */
let held: WeakRef<Segment[]> | null = null;

function segments(): Segment[] {
  const kept = held?.deref();
  if (kept) return kept;
  const all = [
    bmpSegment(0, 0xd7ff),
    // Lone surrogates, which a JavaScript string may hold and the `u` flag reads as code points
    // of their own: leads apart from trails, so that no two of them make a pair.
    bmpSegment(0xd800, 0xdbff),
    bmpSegment(0xdc00, 0xdfff),
    bmpSegment(0xe000, 0xffff),
  ];
  for (let p = 1; p <= 16; p++) all.push(planeSegment(p));
  held = new WeakRef(all);
  return all;
}

function hex(cp: number): string {
  return `\\u{${cp.toString(16)}}`;
}

/** Where the property holds within one segment, appended to `out`. */
function scan(name: string, seg: Segment, out: [number, number][]): void {
  const span = `[${hex(seg.first)}-${hex(seg.last)}]`;
  const inside = new RegExp(`[\\p{${name}}&&${span}]`, "gv");
  const outside = new RegExp(`[${span}--\\p{${name}}]`, "gv");
  const { text, width } = seg;
  let at = 0;
  while (at < text.length) {
    inside.lastIndex = at;
    if (!inside.test(text)) return;
    const start = inside.lastIndex - width;
    outside.lastIndex = inside.lastIndex;
    const end = outside.test(text) ? outside.lastIndex - width : text.length;
    const first = seg.first + start / width;
    const last = seg.first + end / width - 1;
    const prev = out[out.length - 1];
    if (prev && prev[1] + 1 === first) prev[1] = last;
    else out.push([first, last]);
    at = end;
  }
}

/** Ranges by the name as written (`L`, `Letter`, `gc=L`…): there are some 2,000 valid names. */
const computed = new Map<string, PropertyRanges>();

/** What the name inside `\p{…}` may be made of; anything else never reaches a RegExp here. */
const NAME = /^[A-Za-z0-9_]+(=[A-Za-z0-9_]+)?$/;

/**
 * The code points of `\p{name}` under the `u` flag. `name` must be one JavaScript accepts there
 * (the pattern holding it was parsed by JavaScript first): an unknown one throws SyntaxError.
 */
export function propertyRanges(name: string): PropertyRanges {
  const hit = computed.get(name);
  if (hit) return hit;
  if (!NAME.test(name)) throw new SyntaxError(`Invalid property name ${JSON.stringify(name)}`);
  // Properties of strings (`RGI_Emoji`) exist under `v` only: refused as `u` refuses them.
  new RegExp(`\\p{${name}}`, "u");
  const out: [number, number][] = [];
  for (const seg of segments()) scan(name, seg, out);
  computed.set(name, out);
  return out;
}
