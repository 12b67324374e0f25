#!/usr/bin/env node
// portcullis: each command from its own file (scripts/bundle.mjs says why): a CommonJS file of
// main.ts with the other commands left out, the demo from the ES module bundle cli.js.
// This is the source of dist/cli/main.cjs: the build copies it there with the two values marked
// `filled in by the build` written in (scripts/bundle.mjs).
"use strict";
const { isAscii } = require("node:buffer");
const { readFileSync } = require("node:fs");
const Module = require("node:module");
const { dirname, join } = require("node:path");

/** Command name → the file of dist/cli that serves it. Filled in by the build. */
const SERVED = {};
/** The V8 flags a gateway runs under, which its code caches were made under. Filled in by the build. */
const GATEWAY_V8_FLAGS = "";

// The command's file, read as Latin-1 when it is ASCII, as the build writes it: node reads a
// CommonJS file through a UTF-8 decoder that took 15-20 ms of CPU for gateway.cjs, against 3 for
// Latin-1, and V8 compiles the one-byte string faster (docs/performance-history.md, "Session
// thirty"). Only this directory's files; any other, or one not ASCII, as node reads it.
const HERE = __dirname;
const asJs = Module._extensions[".js"];
Module._extensions[".cjs"] = function readCommandFile(module, filename) {
  if (dirname(filename) === HERE) {
    const bytes = readFileSync(filename);
    if (isAscii(bytes)) {
      const source = bytes.toString("latin1");
      const cache = codeCache(filename, bytes);
      return cache === null ? module._compile(source, filename) : fromCache(module, filename, source, cache);
    }
  }
  return asJs(module, filename);
};

/**
 * The V8 code cache the build wrote beside FILE (scripts/codeCache.cjs), when it was made by this
 * V8 from these very bytes and is whole (the digest covers the file and the cache: V8 verifies no
 * checksum, and a damaged cache crashes node); else null, and the file is compiled as node would.
 * V8 also checks its flags and refuses a cache made under others: the file is then compiled from
 * its source all the same. Not when node maps stack traces to the sources (--enable-source-maps),
 * which only its own compile registers.
 */
function codeCache(filename, bytes) {
  if (process.sourceMapsEnabled) return null;
  let file;
  try {
    file = readFileSync(`${filename}.v8cache`);
  } catch {
    return null;
  }
  const lines = [];
  let at = 0;
  for (let i = 0; i < 3; i++) {
    const nl = file.indexOf(10, at);
    if (nl < 0) return null;
    lines.push(file.toString("latin1", at, nl));
    at = nl + 1;
  }
  if (lines[0] !== "portcullis-v8-code-cache 1" || lines[1] !== process.versions.v8) return null;
  const cache = file.subarray(at);
  const digest = require("node:crypto").createHash("sha256").update(bytes).update(cache).digest("hex");
  return lines[2] === digest ? cache : null;
}

/**
 * What module._compile does with a CommonJS file, with V8 given the cache: the module wrapper, run
 * with the module's own require, exports, module, __filename and __dirname.
 */
function fromCache(module, filename, source, cachedData) {
  const vm = require("node:vm");
  const script = new vm.Script(Module.wrap(source), { filename, cachedData });
  const wrapper = script.runInThisContext({ displayErrors: true });
  const own = Module.createRequire(filename);
  return wrapper.call(module.exports, module.exports, own, module, filename, dirname(filename));
}

const [name, topic] = process.argv.slice(2);
// `portcullis help COMMAND` (and `--help COMMAND`, `-h COMMAND`) is COMMAND's --help: its file answers it
const wanted = (name === "help" || name === "--help" || name === "-h") && topic !== undefined ? topic : name;
const file = Object.hasOwn(SERVED, wanted) ? SERVED[wanted] : "usage.cjs";
// the gateway's V8 flags, before its file is compiled: V8 takes a code cache made under the same
// flags only (scripts/bundle.mjs)
if (file === "gateway.cjs" && name === "run" && GATEWAY_V8_FLAGS !== "")
  require("node:v8").setFlagsFromString(GATEWAY_V8_FLAGS);
if (file.endsWith(".cjs")) require(join(HERE, file));
else
  import(require("node:url").pathToFileURL(join(HERE, file)).href).catch((e) => {
    // as node reports an entry that throws as it loads
    process.exitCode = 1;
    console.error(e);
  });
