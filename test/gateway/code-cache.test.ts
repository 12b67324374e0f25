// The V8 code caches the build writes for the gateway's two files (scripts/codeCache.cjs,
// main.cjs): a gateway compiles from them, V8 takes them, and a cache that is not of the file
// beside it, or damaged, is never handed to V8 (node crashes on a damaged one: V8 checks no
// checksum of a code cache), so the gateway compiles from the source and serves as before.
// Real gateways, real processes; a preload (NODE_OPTIONS --require) reports each compile that
// goes through vm.Script (how main.cjs gives V8 a cache; node's own compile of a file does not).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, removeDir, tempDir } from "../helpers/files.js";
import { assertBuilt } from "../helpers/gateway.js";
import { FIXTURES, NODE, REPO } from "../helpers/paths.js";
import { type RawPeer, rawPeer } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const DIST = join(REPO, "dist", "cli");
const CACHED = ["gateway.cjs", "validatorEngine.cjs"];

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Compile {
  file: string;
  cached: boolean;
  rejected: boolean | null;
  /** the cache given starts on an 8-byte boundary of its memory (null: none given) */
  aligned: boolean | null;
  /** the source compiled is exactly Module.wrap of the file's text, as the cache was made from */
  wrapped: boolean;
}

/** A compile of FILE that was given its cache and that V8 took (or, REJECTED, refused). */
const compiled = (file: string, rejected = false) =>
  expect.objectContaining({ file, cached: true, rejected });

/** The header lines of FILE.v8cache and the cache's bytes. */
function readCache(file: string): { lines: string[]; data: Buffer } {
  const bytes = readFileSync(`${file}.v8cache`);
  const lines: string[] = [];
  let at = 0;
  for (let i = 0; i < 3; i++) {
    const nl = bytes.indexOf(10, at);
    lines.push(bytes.toString("latin1", at, nl));
    at = nl + 1;
  }
  return { lines, data: bytes.subarray(at) };
}

/**
 * A gateway of the command line in `dist` (started by `entry`, main.cjs unless said) in front of the echo fixture, with every
 * vm.Script compile of a .cjs file written to a log; answers a tools/call (which loads ajv's file
 * to check its arguments). Returns what was compiled.
 */
async function gatewayCompiles(
  dist: string,
  entry = "main.cjs",
): Promise<{ compiles: Compile[]; peer: RawPeer }> {
  const dir = tempDir("portcullis-code-cache-");
  cleanup.push(() => removeDir(dir));
  const log = join(dir, "compiles.jsonl");
  const spy = join(dir, "spy.cjs");
  writeFileSync(
    spy,
    [
      'const vm = require("node:vm");',
      'const { appendFileSync, readFileSync } = require("node:fs");',
      "const Script = vm.Script;",
      "vm.Script = class extends Script {",
      "  constructor(code, options) {",
      "    super(code, options);",
      '    if (typeof options?.filename !== "string" || !options.filename.endsWith(".cjs")) return;',
      "    const data = options.cachedData;",
      "    const wrapped = code === require('node:module').wrap(readFileSync(options.filename, 'latin1'));",
      `    appendFileSync(${JSON.stringify(log)}, JSON.stringify({ file: options.filename, cached: data !== undefined, rejected: this.cachedDataRejected ?? null, aligned: data === undefined ? null : data.byteOffset % 8 === 0, wrapped }) + "\\n");`,
      "  }",
      "};",
      "",
    ].join("\n"),
  );
  appendFileSync(log, "");
  const stateDir = newStateDir();
  const peer = rawPeer(
    NODE,
    [join(dist, entry), "run", "--state-dir", stateDir, "--label", "code-cache", "--approval", "none"].concat(
      ["--", NODE, FIXTURES.echo],
    ),
    { NODE_OPTIONS: `--require ${spy}` },
    { onClose: () => removeDir(stateDir) },
  );
  cleanup.push(() => peer.close());
  const init = await peer.initialize({}, 30_000);
  expect(init.result, `${JSON.stringify(init)}\n${peer.stderr()}`).toBeDefined();
  const call = await peer.request("tools/call", { name: "echo", arguments: { message: "cached" } }, 30_000);
  expect(call.result, `${JSON.stringify(call)}\n${peer.stderr()}`).toMatchObject({
    content: [{ type: "text", text: "Echo: cached" }],
  });
  return { compiles: readJsonLines<Compile>(log), peer };
}

/** A copy of the built command line in a package of its own (node_modules linked), to damage. */
function copiedDist(): string {
  const pkg = tempDir("portcullis-code-cache-pkg-");
  cleanup.push(() => removeDir(pkg));
  mkdirSync(join(pkg, "dist"));
  cpSync(DIST, join(pkg, "dist", "cli"), { recursive: true });
  cpSync(join(REPO, "package.json"), join(pkg, "package.json"));
  symlinkSync(join(REPO, "node_modules"), join(pkg, "node_modules"), "dir");
  return join(pkg, "dist", "cli");
}

describe("the gateway's V8 code caches", () => {
  it("the build writes one beside each of the gateway's files, made by this V8 from that file's bytes", () => {
    assertBuilt();
    for (const name of CACHED) {
      const file = join(DIST, name);
      const { lines, data } = readCache(file);
      expect(lines[0]).toBe("portcullis-v8-code-cache 1");
      expect(lines[1]).toBe(process.versions.v8);
      const digest = createHash("sha256").update(readFileSync(file)).update(data).digest("hex");
      expect(lines[2], name).toBe(digest);
    }
    // the short commands' files have none (no gain measured), so main.cjs never reads one for them
    expect(existsSync(join(DIST, "status.cjs.v8cache"))).toBe(false);
  });

  it("a gateway compiles its file and ajv's from them, and V8 takes both", async () => {
    const { compiles } = await gatewayCompiles(DIST);
    for (const name of CACHED)
      expect(compiles, JSON.stringify(compiles)).toContainEqual(compiled(join(DIST, name)));
  }, 90_000);

  it("V8 is given each cache at an 8-byte boundary and the file in node's module wrapper, as the cache was made", async () => {
    // V8 copies a cache that is not aligned before reading it, and flattens a source given as a
    // concatenation (Module.wrap's): 2.5 MB and 1.7 MB of fresh memory for gateway.cjs at every
    // start, which this kind of VM charges about 14 µs of CPU a page for
    const { compiles } = await gatewayCompiles(DIST);
    for (const name of CACHED)
      expect(compiles, JSON.stringify(compiles)).toContainEqual({
        file: join(DIST, name),
        cached: true,
        rejected: false,
        aligned: true,
        wrapped: true,
      });
  }, 90_000);

  it("the entry of earlier builds, main.js, which older host configurations name, serves through main.cjs, caches included", async () => {
    const { compiles } = await gatewayCompiles(DIST, "main.js");
    expect(compiles, JSON.stringify(compiles)).toContainEqual(compiled(join(DIST, "gateway.cjs")));
  }, 90_000);

  it("a cache that is not of the file beside it, or is damaged, never reaches V8: the gateway compiles the source and serves", async () => {
    const dist = copiedDist();
    // gateway.cjs changed after its cache was made (an edit of the built file): same cache
    appendFileSync(join(dist, "gateway.cjs"), "\n// edited after the build\n");
    // validatorEngine.cjs's cache damaged in the middle (a bad copy), header left whole: node
    // 20 crashes on such a cache if V8 is given it
    const damaged = readFileSync(join(dist, "validatorEngine.cjs.v8cache"));
    for (let i = damaged.length >> 1; i < (damaged.length >> 1) + 64; i++)
      damaged[i] = (damaged[i]! ^ 0xa5) & 0xff;
    writeFileSync(join(dist, "validatorEngine.cjs.v8cache"), damaged);

    const { compiles, peer } = await gatewayCompiles(dist);
    expect(
      compiles.filter((c) => c.cached),
      JSON.stringify(compiles),
    ).toEqual([]);
    // and the gateway goes on serving
    const again = await peer.request("tools/call", { name: "echo", arguments: { message: "again" } }, 30_000);
    expect(again.result, JSON.stringify(again)).toMatchObject({
      content: [{ type: "text", text: "Echo: again" }],
    });
  }, 90_000);

  it("a cache made under other V8 flags is refused by V8, and the gateway compiles the source and serves", async () => {
    const dist = copiedDist();
    // made again, whole and of these bytes, but under a flag the gateway does not run with
    const remade = spawnSync(
      NODE,
      [join(REPO, "scripts", "codeCache.cjs"), "--stack-size=900", join(dist, "gateway.cjs")],
      {
        encoding: "utf8",
      },
    );
    expect(remade.status, remade.stderr).toBe(0);
    const { compiles } = await gatewayCompiles(dist);
    expect(compiles, JSON.stringify(compiles)).toContainEqual(compiled(join(dist, "gateway.cjs"), true));
  }, 90_000);
});
