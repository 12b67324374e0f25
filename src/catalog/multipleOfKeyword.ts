/**
 * `multipleOf`, in place of ajv 8's own code, which divides and asks whether the quotient is whole
 * by comparing it with `parseInt` of itself. Two things went wrong with that:
 *
 * - `parseInt` reads the quotient's text, which from 1e21 on is in exponent form (`"1e+21"`, read
 *   as 1): every quotient of 1e21 or more was judged fractional. `{"n": 1e21}` was refused by
 *   `multipleOf: 1` and accepted by `multipleOf: 2`.
 * - a quotient is rounded: past 2^53, `x / 1075` can round to a whole number while `x / 25` does
 *   not (x = 11080954076448076, which neither divides).
 *
 * Either way the new schema of a change from `multipleOf: 1` to `multipleOf: 2` (or 25 to 1075)
 * accepted a value the old one refused, yet the classifier proves such a change `narrows`
 * (docs/catalog.md, "Schema keywords": a whole divisor that is a multiple of the old one), so a
 * session grant carried over to a tool that took more than what was approved.
 *
 * Here a whole divisor is checked exactly, on the number as the gateway forwards it: its shortest
 * decimal text (`JSON.stringify`), which is what a server reading whole numbers exactly (Python's
 * `int`, a BigInt) receives. A value is a multiple of a whole divisor when that text is a whole
 * number the divisor divides; so a multiple of a multiple of d is a multiple of d, and the
 * classifier's rule holds. A fractional divisor (`0.01`) keeps ajv's division, without the
 * `parseInt` misreading: its proofs compare equal divisors only. The error and its parameters are
 * ajv's, and so is `multipleOf: 0` failing everything.
 */
import type { CodeKeywordDefinition } from "ajv";
import type { CodeTemplates } from "./hashedKeywords.js";

/** Whether `x` is a multiple of `m` (> 0, as the meta-schema requires), as said above. */
export function isMultipleOf(x: number, m: number): boolean {
  if (!Number.isFinite(x) || !Number.isFinite(m) || m === 0) return false;
  if (!Number.isInteger(m)) return Number.isInteger(x / m);
  // A decimal text that is a whole number is that of a whole double, and the reverse.
  if (!Number.isInteger(x)) return false;
  if (Number.isSafeInteger(x) && Number.isSafeInteger(m)) return x % m === 0;
  return wholeOf(x) % wholeOf(m) === 0n;
}

/** The whole number a whole double's shortest decimal text (`1e+21`, `1.2345e+25`) spells, unsigned. */
function wholeOf(x: number): bigint {
  const text = Math.abs(x).toString();
  const e = text.indexOf("e");
  if (e === -1) return BigInt(text);
  const mantissa = text.slice(0, e);
  const dot = mantissa.indexOf(".");
  const digits = dot === -1 ? mantissa : mantissa.slice(0, dot) + mantissa.slice(dot + 1);
  const shift = Number(text.slice(e + 1)) - (dot === -1 ? 0 : mantissa.length - dot - 1);
  return BigInt(digits) * 10n ** BigInt(shift);
}

export function multipleOfKeyword({ _, str }: CodeTemplates): CodeKeywordDefinition {
  return {
    keyword: "multipleOf",
    type: "number",
    schemaType: "number",
    $data: true,
    error: {
      message: ({ schemaCode }) => str`must be multiple of ${schemaCode}`,
      params: ({ schemaCode }) => _`{multipleOf: ${schemaCode}}`,
    },
    code(cxt) {
      const check = cxt.gen.scopeValue("func", { ref: isMultipleOf });
      cxt.fail$data(_`!${check}(${cxt.data}, ${cxt.schemaCode})`);
    },
  };
}
