// The static part of an execution record (captured before/at launch), the finished record, its
// identity digest, and the human description of what changed between two records.
import { execFile } from "node:child_process";
import { statSync } from "node:fs";
import { basename, dirname, extname, join, resolve, sep } from "node:path";
import { canonicalString, sameJson, sha256Hex, sha256Tag } from "../util/canonical.js";
import { rememberSeen } from "./asCaptured.js";
import type { DigestCache } from "./cache.js";
import { DigestJob, type Slot } from "./digest.js";
import { isFile, realpathOr } from "./files.js";
import { loadGlob } from "./glob.js";
import { matchIncludes, warnIncludes } from "./includeMatch.js";
import { outsideRefusal } from "./includeOutside.js";
import { MAX_LINKED_FILES, type Reached, walkReached, warnOnce } from "./linked.js";
import { isOwnExecutable } from "./proc.js";
import { writtenNumbersUnder } from "./remote.js";
import {
  displayPath,
  findUp,
  IdentityError,
  JS_EXTS,
  type Resolved,
  type RuntimeKind,
  resolveLaunch,
  unreadable,
} from "./resolve.js";
import { splitWords } from "./shellWords.js";
import { parseNodeArgs, toolOf } from "./tools.js";
import type {
  ExecutionRecord,
  FileDigest,
  LaunchSpec,
  ProcessFact,
  ReachedTree,
  RemoteFacts,
  StaticIdentity,
} from "./types.js";

export const LOCKFILES = [
  "package-lock.json",
  "npm-shrinkwrap.json",
  "pnpm-lock.yaml",
  "yarn.lock",
  "bun.lockb",
  "bun.lock",
  "uv.lock",
  "poetry.lock",
  "Cargo.lock",
];

/**
 * Tool caches at the top of node_modules (vite, vitest, babel/webpack `.cache`): rewritten by
 * test runs and builds, never loaded by a server. Left out of the dependency tree and the watcher.
 */
export const NODE_MODULES_SKIP: ReadonlySet<string> = new Set([".cache", ".vite", ".vite-temp", ".vitest"]);

const RUNTIME_TIMEOUT_MS = 5000;

/**
 * What a capture found changed after a given time: a server started before its identity was
 * captured may have loaded a file that the capture then read in another state.
 */
export interface ChangeProbe {
  /** ms since the epoch; a file or directory whose ctime is at or after it counts as changed */
  since: number;
  /** set by the capture: the first changed path it saw, else null */
  touched?: string | null;
}

/**
 * The static identity of a launch. `alsoWarm`: other files to digest into the cache with the same
 * workers (the client's executables, for the agent run's record), which the identity ignores.
 */
export async function captureStaticIdentity(
  spec: LaunchSpec,
  cache: DigestCache,
  probe?: ChangeProbe,
  alsoWarm: readonly string[] = [],
): Promise<StaticIdentity> {
  const cwd = resolve(spec.cwd);
  const r = resolveLaunch(spec.command, spec.args, cwd, spec.env);
  const patterns = spec.include ?? [];
  const globSync = patterns.length > 0 ? await loadGlob() : null;
  const job = new DigestJob(cache, Date.now(), probe?.since ?? null);
  // The server's own code is hashed fresh every time (a forged cache entry could hide a change
  // to it); installed tools (the runtime, a shell, npx…) and the dependency tree use the cache.
  const exeSlot =
    r.executable === null ? null : job.file(r.executable, !isInstalledTool(spec.command, r.executable));
  const entrySlot = r.entry === null ? null : job.file(r.entry, true);
  const wrapperSlots = r.wrappers.map((w) => [w, job.file(w, true)] as const);
  const codeDir = r.entry === null ? cwd : preservesSymlinks(spec) ? dirname(r.entry) : entryDir(r.entry);
  const lockPath = findUp(codeDir, LOCKFILES);
  const lockSlot = lockPath === null ? null : job.file(lockPath, true);
  const rtExe = r.runtime?.exe ?? null;
  const rtSlot = rtExe === null ? null : rtExe === r.executable ? exeSlot : job.file(rtExe);
  for (const p of alsoWarm) job.alsoWarm(p); // skipped when queued above or cached
  const nmRoot = usesNodeModules(r) ? nodeModulesRoot(codeDir) : null;
  const walked =
    nmRoot === null
      ? null
      : walkReached(
          job,
          nmRoot,
          NODE_MODULES_SKIP,
          dirname(nmRoot),
          lockfileIn(),
          ownDirs(cwd, codeDir),
          spec.serverLabel,
        );
  const matched = globSync === null ? null : matchIncludes(cwd, patterns, globSync);
  if (matched !== null) warnIncludes(spec.serverLabel, cwd, matched);
  const inputs = matched === null ? null : job.includes(matched.files);
  await job.run();
  // a file matched outside its pattern's bases: refused, never digested (includeOutside.ts)
  const outside = matched === null ? null : outsideRefusal(cwd, matched);
  if (outside !== null) throw new IdentityError(outside);

  const need = (what: string, abs: string, slot: Slot): FileDigest => {
    if (slot.sha === undefined) throw unreadable(what, abs, cwd, slot.error);
    return { path: displayPath(abs, cwd), sha256: slot.sha };
  };
  const executable =
    r.executable === null || exeSlot === null
      ? null
      : { path: r.executable, sha256: need("executable", r.executable, exeSlot).sha256 };
  const entry = r.entry === null || entrySlot === null ? null : need("entry file", r.entry, entrySlot);
  const wrappers = wrapperSlots.map(([w, slot]) => need("wrapper script", w, slot));
  const lockfile = lockPath === null || lockSlot === null ? null : need("lockfile", lockPath, lockSlot);
  const runtime =
    r.runtime === null ? null : await runtimeOf(r.runtime.kind, rtExe, rtSlot?.sha ?? null, cache);
  const t = walked?.main();
  const more = walked === null ? [] : reachedTrees(walked.reached, cwd, spec.serverLabel);
  const inp = inputs?.();
  if (probe) probe.touched = job.touched;
  cache.save();
  const identity: StaticIdentity = {
    serverLabel: spec.serverLabel,
    launchCommand: [spec.command, ...spec.args],
    executable,
    runtime,
    entry,
    wrappers,
    lockfile,
    dependencyTree:
      nmRoot === null || t === undefined
        ? null
        : {
            root: displayPath(nmRoot, cwd),
            files: t.files,
            sha256: t.sha256,
            // absent when there is nothing more, so a tree without links keeps its digest
            ...(more.length > 0 ? { more } : {}),
          },
    identityInputs:
      inp === undefined ? null : { patterns: [...patterns], files: inp.files, sha256: inp.sha256 },
    workingDirectory: cwd,
    // What the server's environment holds: node adds an env file's variables the spawn
    // environment does not set.
    envDigest: envDigest({ ...r.envFileVars, ...spec.env }),
    configDigest: spec.configDigest,
  };
  // what was read of the server's own files, for the watcher set up after this returns
  rememberSeen(identity, job.seen);
  return identity;
}

/**
 * A command portcullis knows by name (a runtime, a shell, a package runner, a prefix such as
 * `env`): an installed program that runs the server, not the server's code. It can be large (the
 * node binary is ~100 MB), so its digest comes from the cache, like the dependency tree's.
 */
function isInstalledTool(command: string, executable: string): boolean {
  return toolOf(basename(command)) !== null || toolOf(basename(executable)) !== null;
}

/**
 * The directory the entry's code is in, where its imports are resolved from. Node runs a main
 * script by its real path (symlinks resolved), so `node link.js` with link.js pointing into
 * another project loads that project's node_modules: the tree and lockfile are looked up from
 * there. When the directory as named is the same directory (only links above the file, such as
 * macOS's /var), it keeps the name as given, so paths shown and cached do not change.
 */
/**
 * Whether node is told to resolve the entry's imports from the link's own directory, not its
 * target's (`--preserve-symlinks-main`, before the entry or in NODE_OPTIONS): then the dependency
 * tree and the lockfile are looked up from there, as node does. (A flag after the entry is the
 * server's own argument.)
 */
function preservesSymlinks(spec: LaunchSpec): boolean {
  // node's own options: what comes before its entry word (parseNodeArgs knows where that is,
  // whatever extension node adds to it), and NODE_OPTIONS read with its quoting
  const { entry } = parseNodeArgs(spec.args);
  const at = entry === null ? spec.args.length : spec.args.indexOf(entry);
  const options = splitWords(spec.env.NODE_OPTIONS ?? "");
  return [...spec.args.slice(0, at), ...options].includes("--preserve-symlinks-main");
}

function entryDir(entry: string): string {
  const given = dirname(entry);
  const real = dirname(realpathOr(entry));
  return real === realpathOr(given) ? given : real;
}

/** The server's own directories, as real paths: where its entry is, and its working directory. */
function ownDirs(cwd: string, codeDir: string): string[] {
  return [...new Set([realpathOr(cwd), realpathOr(codeDir)])];
}

/** Whether a directory holds a lockfile (the root of an install), memoized for one capture. */
function lockfileIn(): (dir: string) => boolean {
  const seen = new Map<string, boolean>();
  return (dir) => {
    let v = seen.get(dir);
    if (v === undefined) {
      v = LOCKFILES.some((n) => isFile(join(dir, n)));
      seen.set(dir, v);
    }
    return v;
  };
}

/**
 * The record's part for what the dependency tree reaches (linked.ts), in path order. A linked
 * package over the bound is named with no digest, and a warning says so: its code is in no digest
 * and no watch.
 */
function reachedTrees(reached: Reached[], cwd: string, label: string): ReachedTree[] {
  const out: ReachedTree[] = [];
  for (const r of reached) {
    const path = displayPath(r.abs, cwd);
    const d = r.finish?.();
    if (d === undefined) {
      out.push({ path, kind: r.kind, files: 0, sha256: null, skipped: r.skipped ?? "not digested" });
    } else if (d.over) {
      const skipped = `more than ${MAX_LINKED_FILES} files`;
      warnOnce(
        label,
        `the linked directory ${r.abs} has ${skipped}: it is not digested or watched; name what the server loads from it with identity.include`,
      );
      out.push({ path, kind: r.kind, files: d.files, sha256: null, skipped });
    } else out.push({ path, kind: r.kind, files: d.files, sha256: d.sha256 });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function usesNodeModules(r: Resolved): boolean {
  const k = r.runtime?.kind;
  if (k === "node" || k === "bun" || k === "deno") return true;
  return r.entry !== null && JS_EXTS.includes(extname(r.entry));
}

/** The dependency tree a script at `dir` loads from: the outermost node_modules holding it, else the nearest one upward. */
export function nodeModulesRoot(dir: string): string | null {
  const marker = `${sep}node_modules`;
  const i = `${dir}${sep}`.indexOf(`${marker}${sep}`);
  if (i >= 0) return dir.slice(0, i + marker.length);
  let d = dir;
  for (;;) {
    const nm = join(d, "node_modules");
    try {
      if (statSync(nm).isDirectory()) return nm;
    } catch {}
    const up = dirname(d);
    if (up === d) return null;
    d = up;
  }
}

/** "sha256:…" over the sorted KEY=VALUE pairs, NUL-separated. Values are never kept. */
export function envDigest(env: Record<string, string>): string {
  const keys = Object.keys(env).sort();
  return `sha256:${sha256Hex(keys.map((k) => `${k}=${env[k]}`).join("\0"))}`;
}

async function runtimeOf(
  kind: RuntimeKind,
  exe: string | null,
  sha: string | null,
  cache: DigestCache,
): Promise<string | null> {
  if (exe === null || sha === null) return null;
  const key = `runtime\0${exe}\0${sha}`;
  const cached = cache.getMeta(key);
  if (cached !== undefined) return cached;
  let version: string | null = null;
  if (kind === "node" && isOwnExecutable(exe)) version = process.versions.node;
  else version = await askVersion(exe);
  const value = version === null ? null : `${kind} ${version}`;
  if (value !== null) cache.setMeta(key, value);
  return value;
}

function askVersion(exe: string): Promise<string | null> {
  return new Promise((done) => {
    try {
      execFile(
        exe,
        ["--version"],
        { timeout: RUNTIME_TIMEOUT_MS, env: { PATH: process.env.PATH ?? "" }, windowsHide: true },
        (_err, stdout, stderr) => {
          const m = /(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?)/.exec(`${stdout}\n${stderr}`);
          done(m === null ? null : m[1]!);
        },
      );
    } catch {
      done(null);
    }
  });
}

// ---------------------------------------------------------------------------------------------

export function finishRecord(
  s: StaticIdentity,
  live: { epoch: string; processId: number; startedAt: string; processes: ProcessFact[] },
): ExecutionRecord {
  return {
    serverLabel: s.serverLabel,
    epoch: live.epoch,
    launchCommand: s.launchCommand,
    executable: s.executable,
    runtime: s.runtime,
    entry: s.entry,
    wrappers: s.wrappers,
    lockfile: s.lockfile,
    dependencyTree: s.dependencyTree,
    identityInputs: s.identityInputs,
    workingDirectory: s.workingDirectory,
    envDigest: s.envDigest,
    configDigest: s.configDigest,
    identityDigest: identityDigest(s, live.processes),
    processes: live.processes,
    processId: live.processId,
    startedAt: live.startedAt,
  };
}

const STATIC_KEYS = [
  "serverLabel",
  "launchCommand",
  "executable",
  "runtime",
  "entry",
  "wrappers",
  "lockfile",
  "dependencyTree",
  "identityInputs",
  "workingDirectory",
  "envDigest",
  "configDigest",
] as const satisfies readonly (keyof StaticIdentity)[];

/** What of each process is identity (not pid, ppid, start time), with its depth in the tree; input order. */
function processKeys(processes: ProcessFact[]): string[] {
  const byPid = new Map(processes.map((p) => [p.pid, p]));
  const depth = (p: ProcessFact): number => {
    let d = 0;
    let cur: ProcessFact | undefined = p;
    const seen = new Set<number>();
    while (cur !== undefined && byPid.has(cur.ppid) && !seen.has(cur.pid)) {
      seen.add(cur.pid);
      cur = byPid.get(cur.ppid);
      d++;
    }
    return d;
  };
  return processes.map((p) =>
    canonicalString({
      depth: depth(p),
      exe: p.exe,
      exeSha256: p.exeSha256,
      argv: p.argv,
      scripts: [...p.scripts].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
    }),
  );
}

export function identityDigest(s: StaticIdentity, processes: ProcessFact[]): string {
  const stat: Record<string, unknown> = {};
  for (const k of STATIC_KEYS) stat[k] = s[k] ?? null;
  return sha256Tag(canonicalString({ static: stat, processes: processKeys(processes).sort() }));
}

// ---------------------------------------------------------------------------------------------

function same(a: unknown, b: unknown): boolean {
  return sameJson(a ?? null, b ?? null);
}

function treeOnly(t: StaticIdentity["dependencyTree"] | undefined): unknown {
  if (t === null || t === undefined) return null;
  const { more: _more, ...rest } = t;
  return rest;
}

/** "linked package ../core (12 files)", "dependency tree /repo/node_modules (800 files)". */
function reachedChanges(before: ReachedTree[], after: ReachedTree[]): string[] {
  const b = new Map(before.map((x) => [x.path, x]));
  const a = new Map(after.map((x) => [x.path, x]));
  const out: string[] = [];
  for (const p of [...new Set([...b.keys(), ...a.keys()])].sort()) {
    if (same(b.get(p), a.get(p))) continue;
    const x = (a.get(p) ?? b.get(p))!;
    out.push(`${x.kind === "modules" ? "dependency tree" : "linked package"} ${p} (${x.files} files)`);
  }
  return out;
}

function remoteChanges(b: RemoteFacts | undefined, a: RemoteFacts | undefined): string[] {
  if (!b || !a) return ["transport (a launched server and a remote one)"];
  const out: string[] = [];
  if (b.url !== a.url) out.push(`url ${a.url}`);
  if (b.certificateChainSha256 !== a.certificateChainSha256) out.push("TLS certificate chain");
  // (a number beyond a double's precision by its exact value too: `writtenNumbers`)
  const said = (f: RemoteFacts, part: "serverInfo" | "capabilities") => [
    f[part],
    writtenNumbersUnder(f, part),
  ];
  if (!same(said(b, "serverInfo"), said(a, "serverInfo"))) out.push("serverInfo");
  if (b.protocolVersion !== a.protocolVersion) out.push(`protocol version ${a.protocolVersion ?? "(none)"}`);
  if (!same(said(b, "capabilities"), said(a, "capabilities"))) out.push("capabilities");
  if (!same(b.headerNames, a.headerNames)) out.push("headers");
  return out;
}

/** Human phrases for what differs, e.g. "entry dist/server.js", "dependency tree node_modules (20417 files)". */
export function changedParts(
  before: ExecutionRecord | StaticIdentity,
  after: ExecutionRecord | StaticIdentity,
): string[] {
  const out: string[] = [];
  if (!same(before.launchCommand, after.launchCommand)) out.push("launch command");
  if (before.workingDirectory !== after.workingDirectory)
    out.push(`working directory ${after.workingDirectory}`);
  if (!same(before.executable, after.executable)) {
    out.push(`executable ${after.executable?.path ?? before.executable?.path ?? "(none)"}`);
  }
  if ((before.runtime ?? null) !== (after.runtime ?? null))
    out.push(`runtime ${after.runtime ?? "(unknown)"}`);
  if (!same(before.entry, after.entry))
    out.push(`entry ${after.entry?.path ?? before.entry?.path ?? "(none)"}`);
  const bw = new Map((before.wrappers ?? []).map((w) => [w.path, w.sha256]));
  const aw = new Map((after.wrappers ?? []).map((w) => [w.path, w.sha256]));
  for (const p of new Set([...bw.keys(), ...aw.keys()]))
    if (bw.get(p) !== aw.get(p)) out.push(`wrapper ${p}`);
  if (!same(before.lockfile, after.lockfile)) {
    out.push(`lockfile ${after.lockfile?.path ?? before.lockfile?.path ?? "(none)"}`);
  }
  if (!same(treeOnly(before.dependencyTree), treeOnly(after.dependencyTree))) {
    const t = after.dependencyTree ?? before.dependencyTree;
    out.push(t === null ? "dependency tree" : `dependency tree ${t.root} (${t.files} files)`);
  }
  out.push(...reachedChanges(before.dependencyTree?.more ?? [], after.dependencyTree?.more ?? []));
  if (!same(before.identityInputs, after.identityInputs)) out.push("identity inputs");
  if (before.envDigest !== after.envDigest) out.push("environment");
  if (before.configDigest !== after.configDigest) out.push("configuration");
  const br = "remote" in before ? before.remote : undefined;
  const ar = "remote" in after ? after.remote : undefined;
  if (br || ar) out.push(...remoteChanges(br, ar));
  if ("processes" in before && "processes" in after) {
    const b = processKeys(before.processes);
    const a = processKeys(after.processes);
    if (!same([...b].sort(), [...a].sort())) {
      const known = new Set(b);
      const fresh = after.processes.filter((_, i) => !known.has(a[i]!));
      if (fresh.length === 0) out.push("processes");
      for (const p of fresh) out.push(`process ${p.scripts[0]?.path ?? p.exe ?? p.argv[0] ?? p.pid}`);
    }
  }
  return out;
}

export { IdentityError };
