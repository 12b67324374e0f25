/**
 * `enum` and `uniqueItems` checked by hashing, in place of ajv's own code, so that their cost
 * grows with the client's value and not with the server's schema times the client's value.
 *
 * ajv compares a value with each allowed value of an `enum` in turn: an enum of 50,000 strings
 * (one schema node, well within the size limits) on the items of an array took 16 s for 30,000
 * items, a 150 KB call. Its `uniqueItems` compares every pair of items unless their type is a
 * declared primitive one: 8,000 small objects took 5 s; and its fast path for strings missed two
 * items both "__proto__". Here both look values up in sets instead: primitives as themselves
 * (SameValueZero: 1 and 1.0 are one number, and so are 0 and -0), objects and arrays by their
 * RFC 8785 canonical JSON, which is the same for two values exactly when JSON Schema calls them
 * equal (keys in any order, numbers by value).
 */
import type { CodeKeywordDefinition } from "ajv";
import { canonicalString } from "../util/canonical.js";

/**
 * The canonical JSON of the client's objects and arrays met during one check: an `enum` holding
 * an object may be evaluated many times on the same value (a schema's `allOf` of many such
 * enums, `allErrors` evaluating every branch), and each canonical form costs the value's size.
 * Made afresh for each check (validator.ts calls `newCheck`): a value is never mutated during
 * the check that reads it, but may be between two.
 */
let canonicalMemo = new WeakMap<object, string>();

/** Called before each check of a client's arguments: forgets the last check's canonical forms. */
export function newCheck(): void {
  canonicalMemo = new WeakMap();
}

function canonicalOf(v: object): string {
  let text = canonicalMemo.get(v);
  if (text === undefined) {
    text = canonicalString(v);
    canonicalMemo.set(v, text);
  }
  return text;
}

/**
 * Where values first occur in a list: primitives keyed by themselves, objects and arrays by
 * their canonical JSON (two maps, so that the string "[1]" and the array [1] stay apart).
 */
class FirstIndex {
  private readonly primitives = new Map<unknown, number>();
  private readonly structured = new Map<string, number>();

  /** Where a value equal to `v` was first recorded, or undefined; `v` is recorded at `i` when new. */
  record(v: unknown, i: number): number | undefined {
    const [map, key] = this.place(v);
    const first = map.get(key);
    if (first === undefined) map.set(key, i);
    return first;
  }

  /** Whether a value equal to `v` was recorded. */
  has(v: unknown): boolean {
    // no canonical form is taken of a client's object when no recorded value is one
    if (typeof v === "object" && v !== null && this.structured.size === 0) return false;
    const [map, key] = this.place(v);
    return map.has(key);
  }

  private place(v: unknown): [Map<unknown, number>, unknown] {
    if (typeof v === "object" && v !== null) return [this.structured as Map<unknown, number>, canonicalOf(v)];
    return [this.primitives, v];
  }
}

/** ajv's code templates, from the ajv that is loaded (it is loaded lazily: validator.ts). */
export interface CodeTemplates {
  _: typeof import("ajv")._;
  str: typeof import("ajv").str;
}

/**
 * The two keywords, as code ajv inlines: each failure is one error pushed, as ajv's own keywords
 * do. (A keyword function that sets its own errors has them concatenated to the list one
 * failure at a time, which is quadratic in the number of failures: 30,000 bad items took over a minute.)
 */
export function hashedKeywords({ _, str }: CodeTemplates): CodeKeywordDefinition[] {
  const hashedEnum: CodeKeywordDefinition = {
    keyword: "enum",
    schemaType: "array",
    error: {
      message: "must be equal to one of the allowed values",
      params: ({ schemaCode }) => _`{allowedValues: ${schemaCode}}`,
    },
    code(cxt) {
      const list = cxt.schema as unknown[];
      // `code` only for the build's standalone meta-schema checks (metaCheck.ts); never at run time
      const standalone = cxt.it.opts.code.source === true;
      const allowed = cxt.gen.scopeValue("func", {
        ref: enumOf(list),
        ...(standalone ? { code: _`hashedKeywords.enumOf(JSON.parse(${JSON.stringify(list)}))` } : {}),
      });
      cxt.fail(_`!${allowed}(${cxt.data})`);
    },
  };
  const hashedUniqueItems: CodeKeywordDefinition = {
    keyword: "uniqueItems",
    type: "array",
    schemaType: "boolean",
    error: {
      message: ({ params: { i, j } }) =>
        str`must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
      params: ({ params: { i, j } }) => _`{i: ${i}, j: ${j}}`,
    },
    code(cxt) {
      if (cxt.schema !== true) return;
      const find = cxt.gen.scopeValue("func", {
        ref: firstRepeat,
        ...(cxt.it.opts.code.source === true ? { code: _`hashedKeywords.firstRepeat` } : {}),
      });
      const pair = cxt.gen.const("pair", _`${find}(${cxt.data})`);
      cxt.setParams({ i: _`${pair}[1]`, j: _`${pair}[0]` });
      cxt.fail(_`${pair} !== null`);
    },
  };
  return [hashedEnum, hashedUniqueItems];
}

/** Whether a value is one of `list`'s (the closure `enum`'s code calls). */
function enumOf(list: unknown[]): (data: unknown) => boolean {
  const values = new FirstIndex();
  for (let i = 0; i < list.length; i++) values.record(list[i], i);
  return (data: unknown) => values.has(data);
}

/**
 * The two functions the keywords' code calls, for ajv's standalone code of the meta-schema checks
 * that the build writes (metaCheck.ts): there their scope values are `hashedKeywords.enumOf(…)`
 * and `hashedKeywords.firstRepeat` (the `code` above), and the gateway hands this object in as
 * `hashedKeywords`.
 */
export const standaloneRuntime = { enumOf, firstRepeat };

/** The indexes of the first item equal to an earlier one, and of that earlier one; null when all differ. */
function firstRepeat(items: unknown[]): [number, number] | null {
  const seen = new FirstIndex();
  for (let i = 0; i < items.length; i++) {
    const first = seen.record(items[i], i);
    if (first !== undefined) return [first, i];
  }
  return null;
}
