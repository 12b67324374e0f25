/**
 * `contains` (with `minContains` and `maxContains`), in place of ajv 8's own code, which carried a
 * verdict over from one array to the next.
 *
 * For the usual `contains` (at least one item, no maximum) ajv declares its verdict with `var`,
 * which JavaScript hoists to the whole check, and sets it only inside the loop over the items: an
 * empty array left it as the array checked before it had. So `items: {contains: {const: 1}}`
 * accepted `[[1], []]`, and `additionalProperties: {contains: …}` accepted `{"b": [1], "c": []}`
 * (the same object with its keys the other way round was refused). Found by comparing the
 * gateway's verdicts with another validator's (test/catalog/validator-differential.test.ts).
 *
 * Here the verdict is a `let` set before the loop, so every array starts from its own. What the
 * keyword means, its error and its parameters are ajv's: at least `minContains` (1 by default,
 * the only bound draft-07 knows) and at most `maxContains` items valid against the subschema.
 * Like ajv, it marks every item as evaluated (`unevaluatedItems` then ignores them all); a schema
 * where that would decide a verdict (`unevaluatedItems` beside `contains`) is refused before
 * compiling (validator.ts, at the end of `inspectSchema`).
 */
import type { CodeKeywordDefinition } from "ajv";
import type { CodeTemplates } from "./hashedKeywords.js";

/** ajv's marker for a subschema that checks an array item (its path segment is a number). */
const NUMERIC_DATA_PROP = 0;

export function containsKeyword({ _, str }: CodeTemplates): CodeKeywordDefinition {
  return {
    keyword: "contains",
    type: "array",
    schemaType: ["object", "boolean"],
    before: "uniqueItems",
    trackErrors: true,
    error: {
      message: ({ params: { min, max } }) =>
        max === undefined
          ? str`must contain at least ${min} valid item(s)`
          : str`must contain at least ${min} and no more than ${max} valid item(s)`,
      params: ({ params: { min, max } }) =>
        max === undefined ? _`{minContains: ${min}}` : _`{minContains: ${min}, maxContains: ${max}}`,
    },
    code(cxt) {
      const { gen, parentSchema, data, it } = cxt;
      // the bounds are 2019-09 keywords: ajv reads them only in its 2020-12 instance ("next")
      const bounded = it.opts.next === true;
      const min: number =
        bounded && typeof parentSchema.minContains === "number" ? parentSchema.minContains : 1;
      const max: number | undefined =
        bounded && typeof parentSchema.maxContains === "number" ? parentSchema.maxContains : undefined;
      cxt.setParams({ min, max });
      if (max === undefined && min === 0) return; // any array passes
      if (max !== undefined && min > max) {
        cxt.fail();
        return;
      }
      it.items = true;
      const valid = gen.let("valid", min === 0);
      const count = gen.let("count", 0);
      const itemValid = gen.name("_valid");
      gen.forRange("i", 0, _`${data}.length`, (i) => {
        cxt.subschema(
          { keyword: "contains", dataProp: i, dataPropType: NUMERIC_DATA_PROP, compositeRule: true },
          itemValid,
        );
        gen.if(itemValid, () => {
          gen.code(_`${count}++`);
          if (max !== undefined) gen.if(_`${count} > ${max}`, () => gen.assign(valid, false).break());
          gen.if(_`${count} >= ${min}`, () => {
            gen.assign(valid, true);
            if (max === undefined) gen.break(); // enough found, and no maximum to watch
          });
        });
      });
      cxt.result(valid, () => cxt.reset());
    },
  };
}
