#!/usr/bin/env node
// For humans: `npm run build && node test/conformance/run.mjs` prints the official conformance
// suite's server scenarios, direct vs through portcullis, and exits 1 if any scenario that
// passes direct fails through portcullis. See harness.mjs for what runs where.
import { compare, formatTable, runSides } from "./harness.mjs";

const verbose = process.argv.includes("--verbose");
const { direct, through, listen } = await runSides();
if (verbose) console.log(direct.output, "\n", through.output, "\n", listen.output);
else
  for (const side of [direct, through, listen])
    console.log(
      side.output.slice(side.output.indexOf("--- failed checks ---")).split("--- bridge stderr ---")[0],
    );
const { rows, regressions, listenRegressions } = compare(direct.results, through.results, listen.results);
console.log(formatTable(rows));
const ok = (r) => Object.values(r).filter((x) => x.ok).length;
console.log(
  `\ndirect: ${ok(direct.results)}/${rows.length} pass; through portcullis: ${ok(through.results)}/${rows.length} pass; portcullis --listen: ${ok(listen.results)}/${rows.length} pass`,
);
if (listenRegressions.length > 0) {
  console.log(`passing direct but failing through portcullis --listen: ${listenRegressions.join(", ")}`);
  process.exitCode = 1;
}
if (regressions.length > 0) {
  console.log(`passing direct but failing through portcullis: ${regressions.join(", ")}`);
  process.exitCode = 1;
}
