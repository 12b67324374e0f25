/**
 * The regular-expression engine ajv uses for a schema's `pattern` and `patternProperties`:
 * linear in the length of the text, so a server's pattern such as `^(a+)+$` cannot freeze the
 * gateway on a crafted argument (JavaScript's own RegExp backtracks: 2^n steps for n characters).
 *
 * Patterns are written in JavaScript syntax (JSON Schema says ECMA-262; ajv compiles them with the
 * `u` flag), and RE2 (re2js, a pure-JavaScript port) reads another dialect with other meanings
 * for `\s`, `.`, `[]`. So a pattern is first checked by JavaScript's own parser (checking syntax
 * never runs the backtracker), then rewritten token by token into RE2 syntax with every character
 * set spelled out as explicit code-point ranges: what matches is exactly what JavaScript would
 * match, only found without backtracking. Unicode property escapes (`\p{L}`, `\P{Script=Greek}`,
 * `[^\p{L}\p{N}_]`) are spelled out the same way, from this process's own JavaScript tables
 * (unicodeProperties.ts; RE2's tables are of another Unicode version), and their ranges count
 * against the size caps like any other. What cannot be carried over exactly (lookahead,
 * lookbehind, backreferences: none can be matched in linear time; counts above 1000, a program
 * too large) throws UncheckablePattern; the validator refuses that tool's calls rather than check
 * them some other way or let them through.
 */
import { createRequire } from "node:module";
import { propertyRanges } from "./unicodeProperties.js";

/** Why a pattern cannot be checked in bounded time; thrown through ajv's compile. */
export class UncheckablePattern extends Error {
  readonly pattern: string;
  readonly reason: string;
  constructor(pattern: string, reason: string) {
    super(`pattern ${shown(pattern)} uses ${reason}`);
    this.pattern = pattern;
    this.reason = reason;
  }
}

/** A server's pattern as quoted in messages: JSON-escaped, and cut when long. */
export function shown(pattern: string): string {
  return JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 80)}…` : pattern);
}

/** What ajv needs of a compiled pattern. */
export interface LinearPattern {
  test(s: string): boolean;
  toString(): string;
}

interface Re2Module {
  RE2JS: { compile(expr: string, flags?: number): { test(s: string): boolean } };
}
let re2: Re2Module | null = null;
function re2js(): Re2Module {
  if (!re2) re2 = createRequire(import.meta.url)("re2js") as Re2Module;
  return re2;
}

const MAX_CODE_POINT = 0x10ffff;
/** RE2 refuses larger counts (and its program grows with them). */
const MAX_REPEAT = 1000;
/**
 * The longest rewritten pattern compiled (each `\S` or `.` spells out to about 100 characters of
 * ranges): compile time grows with it. docs/performance-history.md ("Patterns: which linear-time
 * engine") has the measurement.
 */
export const MAX_TRANSLATED_CHARS = 64 * 1024;

type Ranges = [number, number][];

/** Sorted, merged, non-overlapping. */
function normalize(ranges: Ranges): Ranges {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

function complement(ranges: Ranges): Ranges {
  const out: Ranges = [];
  let next = 0;
  for (const [lo, hi] of normalize(ranges)) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

const DIGIT: Ranges = [[0x30, 0x39]];
const WORD: Ranges = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
/** JavaScript's `\s`: WhiteSpace and LineTerminator (RE2's `\s` is ASCII only). */
export const JS_SPACE: Ranges = normalize([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);
/** What `.` matches without the `s` flag: all but the line terminators. */
const DOT: Ranges = complement([
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
]);

function hex(cp: number): string {
  return `\\x{${cp.toString(16)}}`;
}

function emitSet(ranges: Ranges): string {
  const n = normalize(ranges);
  // An empty set (JavaScript's `[]`) matches nothing; RE2 has no `[]`.
  if (n.length === 0) return `[^\\x{0}-\\x{10ffff}]`;
  const one = single(n);
  if (one !== null) return hex(one);
  return `[${n.map(([lo, hi]) => (lo === hi ? hex(lo) : `${hex(lo)}-${hex(hi)}`)).join("")}]`;
}

const SYNTAX = new Set("^$\\.*+?()[]{}|/");
const CONTROL: Record<string, number> = { f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09, v: 0x0b };

/**
 * Rewrites a JavaScript (`u` flag) pattern, already accepted by JavaScript's parser, into RE2
 * syntax of the same meaning. Capturing groups become non-capturing: only `test` is ever asked.
 */
class Translator {
  private readonly cps: string[];
  private i = 0;
  private readonly pattern: string;
  private readonly beforeProperty: (name: string) => void;
  /** The Unicode properties the pattern names, each once. */
  readonly properties = new Set<string>();

  constructor(pattern: string, beforeProperty: (name: string) => void) {
    this.pattern = pattern;
    this.cps = Array.from(pattern);
    this.beforeProperty = beforeProperty;
  }

  run(): string {
    const out = this.disjunction();
    if (this.i < this.cps.length) this.unsupported("unexpected syntax");
    return out;
  }

  private unsupported(reason: string): never {
    throw new UncheckablePattern(this.pattern, reason);
  }

  private peek(k = 0): string | undefined {
    return this.cps[this.i + k];
  }

  private eat(s: string): boolean {
    const parts = Array.from(s);
    for (let k = 0; k < parts.length; k++) if (this.peek(k) !== parts[k]) return false;
    this.i += parts.length;
    return true;
  }

  private disjunction(): string {
    const alternatives = [this.alternative()];
    while (this.eat("|")) alternatives.push(this.alternative());
    return alternatives.join("|");
  }

  private alternative(): string {
    let out = "";
    for (let c = this.peek(); c !== undefined && c !== "|" && c !== ")"; c = this.peek()) out += this.term();
    return out;
  }

  private term(): string {
    if (this.eat("^")) return "^";
    if (this.eat("$")) return "$";
    if (this.eat("\\b")) return "\\b";
    if (this.eat("\\B")) return "\\B";
    if (this.eat("(?=") || this.eat("(?!")) this.unsupported("a lookahead");
    if (this.eat("(?<=") || this.eat("(?<!")) this.unsupported("a lookbehind");
    const atom = this.atom();
    return atom + this.quantifier();
  }

  private atom(): string {
    const c = this.peek();
    if (c === "(") return this.group();
    if (c === "[") return emitSet(this.characterClass());
    if (c === ".") {
      this.i++;
      return emitSet(DOT);
    }
    if (c === "\\") return emitSet(this.escape(false));
    if (c === undefined || "*+?{}]".includes(c)) this.unsupported("unexpected syntax");
    this.i++;
    return hex(c.codePointAt(0) as number);
  }

  private group(): string {
    this.i++; // (
    if (this.eat("?:")) {
      // non-capturing
    } else if (this.peek() === "?" && this.peek(1) === "<") {
      this.i += 2;
      while (this.peek() !== undefined && this.peek() !== ">") this.i++;
      if (!this.eat(">")) this.unsupported("unexpected syntax");
    } else if (this.peek() === "?") {
      this.unsupported("a group syntax RE2 does not share");
    }
    const inner = this.disjunction();
    if (!this.eat(")")) this.unsupported("unexpected syntax");
    return `(?:${inner})`;
  }

  private quantifier(): string {
    let q = "";
    const c = this.peek();
    if (c === "*" || c === "+" || c === "?") {
      this.i++;
      q = c;
    } else if (c === "{") {
      const m = /^\{(\d{1,9})(,(\d{0,9}))?\}/.exec(this.cps.slice(this.i, this.i + 24).join(""));
      if (!m) this.unsupported(`a repetition count above ${MAX_REPEAT}`);
      this.i += m[0].length;
      const min = Number(m[1]);
      const max = m[3] === undefined || m[3] === "" ? min : Number(m[3]);
      if (min > MAX_REPEAT || max > MAX_REPEAT) this.unsupported(`a repetition count above ${MAX_REPEAT}`);
      q = m[2] === undefined ? `{${min}}` : m[3] === "" ? `{${min},}` : `{${min},${max}}`;
    } else {
      return "";
    }
    // Lazy or greedy match the same strings: only whether one exists is asked.
    this.eat("?");
    return q;
  }

  /** After a backslash: the set of code points it stands for. */
  private escape(inClass: boolean): Ranges {
    this.i++; // backslash
    const c = this.peek();
    if (c === undefined) this.unsupported("unexpected syntax");
    this.i++;
    switch (c) {
      case "d":
        return DIGIT;
      case "D":
        return complement(DIGIT);
      case "w":
        return WORD;
      case "W":
        return complement(WORD);
      case "s":
        return JS_SPACE;
      case "S":
        return complement(JS_SPACE);
      case "p":
      case "P": {
        // Spelled out from JavaScript's own tables (RE2's are of another Unicode version).
        const ranges = this.property();
        return c === "P" ? complement(ranges) : ranges;
      }
      case "k":
        return this.unsupported("a backreference");
      case "0":
        return [[0, 0]];
      case "c": {
        const letter = this.peek();
        if (letter === undefined || !/^[A-Za-z]$/.test(letter)) this.unsupported("unexpected syntax");
        this.i++;
        const cp = (letter.codePointAt(0) as number) % 32;
        return [[cp, cp]];
      }
      case "x":
        return this.hexDigits(2);
      case "u":
        return this.unicodeEscape();
      default:
        break;
    }
    if (/^[1-9]$/.test(c)) this.unsupported("a backreference");
    const control = CONTROL[c];
    if (control !== undefined) return [[control, control]];
    if (inClass && c === "b") return [[0x08, 0x08]];
    if (SYNTAX.has(c) || (inClass && c === "-")) {
      const cp = c.codePointAt(0) as number;
      return [[cp, cp]];
    }
    return this.unsupported("unexpected syntax");
  }

  /** After `\p` or `\P`: `{name}` or `{name=value}`, as code-point ranges. */
  private property(): Ranges {
    if (!this.eat("{")) this.unsupported("unexpected syntax");
    let name = "";
    while (this.peek() !== undefined && this.peek() !== "}") name += this.cps[this.i++];
    if (!this.eat("}")) this.unsupported("unexpected syntax");
    // charged before it is computed: a pattern naming many properties stops at the budget
    this.beforeProperty(name);
    this.properties.add(name);
    return propertyRanges(name).map(([lo, hi]): [number, number] => [lo, hi]);
  }

  private hexDigits(n: number): Ranges {
    const digits = this.cps.slice(this.i, this.i + n).join("");
    if (!new RegExp(`^[0-9A-Fa-f]{${n}}$`).test(digits)) this.unsupported("unexpected syntax");
    this.i += n;
    const cp = Number.parseInt(digits, 16);
    return [[cp, cp]];
  }

  private unicodeEscape(): Ranges {
    if (this.eat("{")) {
      let digits = "";
      while (this.peek() !== undefined && this.peek() !== "}") digits += this.cps[this.i++];
      if (!this.eat("}") || !/^[0-9A-Fa-f]+$/.test(digits)) this.unsupported("unexpected syntax");
      const cp = Number.parseInt(digits, 16);
      if (cp > MAX_CODE_POINT) this.unsupported("unexpected syntax");
      return [[cp, cp]];
    }
    const lead = single(this.hexDigits(4)) as number;
    // A surrogate pair written as two escapes is one code point under the u flag.
    if (lead >= 0xd800 && lead <= 0xdbff && this.peek() === "\\" && this.peek(1) === "u") {
      const save = this.i;
      this.i += 2;
      const digits = this.cps.slice(this.i, this.i + 4).join("");
      if (/^[0-9A-Fa-f]{4}$/.test(digits)) {
        const trail = Number.parseInt(digits, 16);
        if (trail >= 0xdc00 && trail <= 0xdfff) {
          this.i += 4;
          const cp = (lead - 0xd800) * 0x400 + (trail - 0xdc00) + 0x10000;
          return [[cp, cp]];
        }
      }
      this.i = save;
    }
    return [[lead, lead]];
  }

  private characterClass(): Ranges {
    this.i++; // [
    const negated = this.eat("^");
    const ranges: Ranges = [];
    while (this.peek() !== "]") {
      if (this.peek() === undefined) this.unsupported("unexpected syntax");
      const from = this.classAtom();
      if (this.peek() === "-" && this.peek(1) !== "]" && this.peek(1) !== undefined) {
        this.i++;
        const to = this.classAtom();
        const lo = single(from);
        const hi = single(to);
        if (lo === null || hi === null || lo > hi) this.unsupported("unexpected syntax");
        ranges.push([lo, hi]);
      } else {
        ranges.push(...from);
      }
    }
    this.i++; // ]
    return negated ? complement(ranges) : normalize(ranges);
  }

  private classAtom(): Ranges {
    const c = this.peek() as string;
    if (c === "\\") return this.escape(true);
    this.i++;
    const cp = c.codePointAt(0) as number;
    return [[cp, cp]];
  }
}

/** The one code point a set holds, or null. */
function single(r: Ranges): number | null {
  const [first] = r;
  return r.length === 1 && first !== undefined && first[0] === first[1] ? first[0] : null;
}

/**
 * JavaScript pattern (u flag) to RE2 syntax with the same matches; throws UncheckablePattern.
 * `beforeProperty` is told each Unicode property the pattern names before it is spelled out.
 */
export function translatePattern(
  pattern: string,
  beforeProperty: (name: string) => void = () => {},
): { source: string; cost: number; properties: string[] } {
  // JavaScript's parser first: what it rejects is an invalid schema, as it always was.
  new RegExp(pattern, "u");
  const t = new Translator(pattern, beforeProperty);
  const source = t.run();
  if (source.length > MAX_TRANSLATED_CHARS) {
    throw new UncheckablePattern(pattern, "more character classes than can be checked in bounded time");
  }
  return { source, cost: source.length + PATTERN_OVERHEAD, properties: [...t.properties] };
}

/**
 * What one tool's patterns may cost in all, in rewritten characters plus PATTERN_OVERHEAD each:
 * compiling that much stays near 100 ms (docs/performance-history.md, "Patterns: which
 * linear-time engine"). Charged once for each distinct
 * pattern of the tool, even one compiled before for another tool, so whether a tool is refused
 * never depends on what other tools were compiled earlier; the same pattern used again in the same
 * tool (one `^[\p{L}\p{N} _-]+$` on twenty fields) is compiled once and charged once.
 */
export const MAX_PATTERN_COST_PER_TOOL = 256 * 1024;
/** Compiling even a short pattern takes about 0.1 ms (1,000 of them: 139 ms). */
const PATTERN_OVERHEAD = 512;
/**
 * Charged once a tool for each Unicode property its patterns name (`\p{L}` and `\P{L}` are one):
 * spelling a property out from JavaScript's tables the first time takes 2 to 13 ms (the first of a
 * process, which builds the strings it walks, about 80; docs/performance-history.md, "Patterns:
 * which linear-time engine"), so a tool names
 * fewer than 16. Its ranges count on top, as rewritten text.
 */
export const PROPERTY_COST = 16 * 1024;
let budget: number | null = null;
/** The properties already charged against `budget`. */
let charged: Set<string> | null = null;
/** The patterns already charged against `budget`. */
let chargedPatterns: Set<string> | null = null;

/** Runs `compile` (an ajv compile of one tool's schema) with a fresh pattern budget. */
export function withPatternBudget<T>(compile: () => T): T {
  const outer = { budget, charged, chargedPatterns };
  budget = MAX_PATTERN_COST_PER_TOOL;
  charged = new Set();
  chargedPatterns = new Set();
  try {
    return compile();
  } finally {
    ({ budget, charged, chargedPatterns } = outer);
  }
}

function chargeProperty(pattern: string, name: string): void {
  if (budget === null || charged === null || charged.has(name)) return;
  charged.add(name);
  budget -= PROPERTY_COST;
  if (budget < 0) {
    throw new UncheckablePattern(
      pattern,
      "more Unicode properties in one schema than can be checked in bounded time",
    );
  }
}

interface CompiledPattern {
  cost: number;
  properties: string[];
  test(s: string): boolean;
}

/** Compiled patterns by source: ajv asks again for every use of the same pattern. */
const cache = new Map<string, CompiledPattern>();
const CACHE_ENTRIES = 1024;

function compiled(pattern: string): CompiledPattern {
  const hit = cache.get(pattern);
  if (hit) return hit;
  const { source, cost, properties } = translatePattern(pattern, (name) => chargeProperty(pattern, name));
  let re: { test(s: string): boolean };
  try {
    re = re2js().RE2JS.compile(source);
  } catch (err) {
    const why = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw new UncheckablePattern(pattern, `a construct the linear-time engine cannot take (${why})`);
  }
  const entry = { cost, properties, test: (s: string) => re.test(s) };
  if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
  cache.set(pattern, entry);
  return entry;
}

/**
 * ajv's `code.regExp`: compiles `pattern` for linear-time matching, or throws. ajv keys its
 * cache of compiled patterns by toString(), so that must differ whenever the pattern does.
 */
export function linearRegExp(pattern: string, flags: string): LinearPattern {
  // ajv passes "u" (its unicodeRegExp default); without it JavaScript reads patterns otherwise.
  if (flags !== "u") throw new UncheckablePattern(pattern, `the regular-expression flags "${flags}"`);
  const entry = compiled(pattern);
  const label = `/${pattern}/${flags}`;
  if (chargedPatterns?.has(pattern)) return { test: entry.test, toString: () => label };
  chargedPatterns?.add(pattern);
  // a pattern compiled before (for this tool or another) still charges its properties here
  for (const name of entry.properties) chargeProperty(pattern, name);
  if (budget !== null) {
    budget -= entry.cost;
    if (budget < 0) {
      throw new UncheckablePattern(
        pattern,
        "more pattern text in one schema than can be checked in bounded time",
      );
    }
  }
  return { test: entry.test, toString: () => label };
}
/** Printed into ajv's standalone code only: the build's meta-schema checks (metaCheck.ts) name it so. */
linearRegExp.code = "linearRegExp";
