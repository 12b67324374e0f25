#!/usr/bin/env node
// portcullis: each command from its own file (scripts/bundle.mjs says why): a CommonJS file of
// main.ts with the other commands left out, the demo from the ES module bundle cli.js.
// This is the source of dist/cli/main.cjs: the build copies it there with the two values marked
// `filled in by the build` written in (scripts/bundle.mjs).
"use strict";
const { isAscii } = require("node:buffer");
const { closeSync, fstatSync, openSync, readSync } = require("node:fs");
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
    const halves = moduleWrapper();
    if (halves === null) return asJs(module, filename);
    const [head, tail] = halves;
    const wrapped = readBetween(filename, head, tail);
    const bytes = wrapped.subarray(head.length, wrapped.length - tail.length);
    if (isAscii(bytes)) {
      const cache = codeCache(filename, bytes);
      return cache === null
        ? module._compile(bytes.toString("latin1"), filename)
        : fromCache(module, filename, wrapped.toString("latin1"), cache);
    }
  }
  return asJs(module, filename);
};

/**
 * The two halves of node's CommonJS module wrapper, as Module.wrap puts them around a file. The
 * code cache was made from Module.wrap's string (scripts/codeCache.cjs); should something have
 * replaced Module.wrap with another wrapping, the halves are worked out from what it makes of a
 * marker, so the source V8 compiles is still exactly Module.wrap's; null when that is not a
 * wrapping of the marker, and node loads the file its own way.
 */
function moduleWrapper() {
  const marker = "\u0000portcullis-module-body\u0000";
  const whole = Module.wrap(marker);
  const at = typeof whole === "string" ? whole.indexOf(marker) : -1;
  if (at < 0 || !isAscii(Buffer.from(whole, "utf8"))) return null;
  return [whole.slice(0, at), whole.slice(at + marker.length)];
}

/**
 * FILE's bytes with HEAD before them and TAIL after (both ASCII), in one buffer read once. Why
 * not Module.wrap(text): that string is a concatenation, which V8 copies whole into a flat string
 * before it looks the script up (1.7 MB for gateway.cjs), and on this kind of VM each page of
 * fresh memory touched costs about 14 µs of CPU (docs/performance-history.md, "Session
 * fifty-five: warm start on a slower machine"): one buffer, read into once and decoded once, is
 * already flat.
 */
function readBetween(filename, head, tail) {
  const fd = openSync(filename, "r");
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.allocUnsafeSlow(head.length + size + tail.length);
    buf.write(head, 0, "latin1");
    let end = head.length;
    // a file that shrank since the fstat ends earlier
    for (let n = 1; n > 0 && end < head.length + size; end += n)
      n = readSync(fd, buf, end, head.length + size - end, null);
    buf.write(tail, end, "latin1");
    return buf.subarray(0, end + tail.length);
  } finally {
    closeSync(fd);
  }
}

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
  let fd;
  try {
    fd = openSync(`${filename}.v8cache`, "r");
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    const header = Buffer.alloc(Math.min(size, 512));
    const lines = [];
    let at = 0;
    if (readFully(fd, header, 0) === header.length)
      for (let i = 0; i < 3; i++) {
        const nl = header.indexOf(10, at);
        if (nl < 0) return null;
        lines.push(header.toString("latin1", at, nl));
        at = nl + 1;
      }
    if (lines[0] !== "portcullis-v8-code-cache 1" || lines[1] !== process.versions.v8) return null;
    // the cache in a buffer of its own, at its start: V8 copies a cache that does not start on an
    // 8-byte boundary (2.5 MB for gateway.cjs, fresh pages again), as it did not after the header
    const cache = Buffer.allocUnsafeSlow(size - at);
    if (readFully(fd, cache, at) !== cache.length) return null;
    const digest = require("node:crypto").createHash("sha256").update(bytes).update(cache).digest("hex");
    return lines[2] === digest ? cache : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** Reads FD from POSITION into the whole of BUF, or to the end of the file: the bytes read. */
function readFully(fd, buf, position) {
  let got = 0;
  for (let n = 1; n > 0 && got < buf.length; got += n)
    n = readSync(fd, buf, got, buf.length - got, position + got);
  return got;
}

/**
 * What module._compile does with a CommonJS file, with V8 given the cache: WRAPPED is the file in
 * the module wrapper (Module.wrap's string), run with the module's own require, exports, module,
 * __filename and __dirname.
 */
function fromCache(module, filename, wrapped, cachedData) {
  const vm = require("node:vm");
  const script = new vm.Script(wrapped, { filename, cachedData });
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
