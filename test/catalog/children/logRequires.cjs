// Preloaded with `node --require` (through NODE_OPTIONS) by validator-engine.test.ts: appends the
// path of every CommonJS module this process loads to the file REQUIRE_LOG names.
const Module = require("node:module");
const { appendFileSync } = require("node:fs");

const log = process.env.REQUIRE_LOG;
const load = Module._load;
Module._load = function (request, parent, isMain, ...rest) {
  const out = load.call(this, request, parent, isMain, ...rest);
  if (log) {
    try {
      appendFileSync(log, `${Module._resolveFilename(request, parent, isMain)}\n`);
    } catch {
      /* a built-in or an unresolvable request: nothing to note */
    }
  }
  return out;
};
