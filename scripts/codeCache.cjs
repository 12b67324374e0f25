// V8 code caches for the command line's largest CommonJS files, written by scripts/bundle.mjs
// beside them (dist/cli/NAME.cjs.v8cache) and read by main.js when node loads NAME.cjs.
//
//   node scripts/codeCache.cjs V8FLAGS FILE...
//
// V8FLAGS: the V8 flags the files are loaded under at run time (main.js sets them before it
// loads the file), or "" for none. V8 refuses a cache made under other flags, so they are set
// here first. Every function of the file is compiled (`--no-lazy`, reset before the cache is
// written, since the flags are part of what V8 checks), so that a gateway finds the bytecode of
// whatever it runs in the cache instead of compiling it on first call.
//
// File layout (read by main.js, which falls back to compiling the source on any mismatch):
//   "portcullis-v8-code-cache 1\n"
//   process.versions.v8 "\n"      V8 refuses another version's cache; main.js does not even try
//   sha256, hex "\n"             of the file's bytes followed by the cache's: V8 itself checks only
//                                the source's length, and takes a damaged cache as it is (node 20
//                                crashes on one: V8 verifies no checksum of a code cache unless
//                                told to), so main.js checks this before V8 sees the cache
//   the cache's bytes
"use strict";
const { isAscii } = require("node:buffer");
const { createHash } = require("node:crypto");
const { readFileSync, renameSync, writeFileSync } = require("node:fs");
const Module = require("node:module");
const { setFlagsFromString } = require("node:v8");
const vm = require("node:vm");

const [flags, ...files] = process.argv.slice(2);
if (flags) setFlagsFromString(flags);
for (const file of files) {
  const bytes = readFileSync(file);
  // main.js compiles from a cache only what it reads as Latin-1: an ASCII file
  if (!isAscii(bytes)) throw new Error(`${file} is not ASCII: no code cache can be used for it`);
  // Code compiled with a cache has no dynamic import() here (node 20 gives it no loader without
  // an experimental option): a file that uses one must require() instead.
  const text = bytes.toString("latin1");
  const dynamicImport = /(?<![\w$.])import\s*\(/.exec(text);
  if (dynamicImport !== null) {
    const line = text.slice(0, dynamicImport.index).split("\n").length;
    throw new Error(
      `${file}:${line} has a dynamic import(), which fails when compiled from a code cache: use require()`,
    );
  }
  setFlagsFromString("--no-lazy");
  const script = new vm.Script(Module.wrap(text), { filename: file });
  setFlagsFromString("--lazy");
  const data = script.createCachedData();
  const digest = createHash("sha256").update(bytes).update(data).digest("hex");
  const header = `portcullis-v8-code-cache 1\n${process.versions.v8}\n${digest}\n`;
  writeFileSync(`${file}.v8cache.tmp`, Buffer.concat([Buffer.from(header, "latin1"), data]));
  renameSync(`${file}.v8cache.tmp`, `${file}.v8cache`);
}
