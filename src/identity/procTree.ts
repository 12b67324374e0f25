// Process trees: a process and its live descendants (the execution record's processes), and the
// children of one (whether a parent put another process in place of one that went away).
import { existsSync, readdirSync } from "node:fs";
import type { DigestCache } from "./cache.js";
import { plainExe } from "./procDescribe.js";
import { dead, lstart, ps, readLink, readProcFile, readStat, type StatLine, validPid } from "./procRead.js";
import { displayPath, scriptsOfProcess } from "./resolve.js";
import type { FileDigest, ProcessFact } from "./types.js";

export interface ListOptions {
  /** Digest each process's executable and scripts through this cache (cheap once warm). */
  digest?: DigestCache;
  /** Script paths are shown relative to this directory (default: the root process's cwd). */
  cwd?: string;
}

/**
 * The live children of `pid` (zombies left out), with their start times and executables. Linux
 * reads each thread's children file (or the process table where there is none); elsewhere the
 * process list. Used only when a watched process went away, to see whether its parent put
 * another one in its place.
 */
export function listChildren(pid: number): { pid: number; startTime: string; exe: string | null }[] {
  if (!validPid(pid)) return [];
  if (process.platform !== "linux") {
    return listDescendants(pid)
      .filter((p) => p.ppid === pid)
      .map((p) => ({ pid: p.pid, startTime: p.startTime, exe: p.exe }));
  }
  const kids = hasChildrenFiles() ? childrenViaTasks(pid) : (childrenViaTable().get(pid) ?? []);
  const out: { pid: number; startTime: string; exe: string | null }[] = [];
  for (const kid of kids) {
    const st = readStat(kid);
    if (st === null || dead(st) || st.ppid !== pid) continue;
    out.push({ pid: kid, startTime: st.startTime, exe: exePath(kid) });
  }
  return out;
}

/** The path /proc/PID/exe names (plainExe). */
function exePath(pid: number): string | null {
  return plainExe(readLink(`/proc/${pid}/exe`));
}

// Linux without /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN off): a table of every process's
// parent, refreshed incrementally. A process's parent only changes by reparenting to an ancestor
// (init or a subreaper), so a process that is not a descendant never becomes one, and only new
// pids and current descendants need reading. A full re-read every FULL_SCAN_MS also covers a pid
// reused within that time.
const FULL_SCAN_MS = 5000;
const table = new Map<number, { ppid: number; startTime: string }>();
let lastFullScan = 0;
let childrenFiles: boolean | undefined;

function hasChildrenFiles(): boolean {
  childrenFiles ??= existsSync(`/proc/self/task/${process.pid}/children`);
  return childrenFiles;
}

function childrenViaTasks(pid: number): number[] {
  const out: number[] = [];
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    const text = readProcFile(`/proc/${pid}/task/${tid}/children`);
    if (text === null) continue;
    for (const w of text.split(" ")) if (w !== "" && w !== "\n") out.push(Number(w));
  }
  return out;
}

function childrenViaTable(): Map<number, number[]> {
  const now = Date.now();
  const full = now - lastFullScan >= FULL_SCAN_MS;
  if (full) lastFullScan = now;
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    names = [];
  }
  const present = new Set<number>();
  for (const name of names) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const pid = Number(name);
    present.add(pid);
    if (!full && table.has(pid)) continue;
    const st = readStat(pid);
    if (st !== null) table.set(pid, { ppid: st.ppid, startTime: st.startTime });
  }
  for (const pid of table.keys()) if (!present.has(pid)) table.delete(pid);
  const kids = new Map<number, number[]>();
  for (const [pid, e] of table) {
    const list = kids.get(e.ppid);
    if (list === undefined) kids.set(e.ppid, [pid]);
    else list.push(pid);
  }
  return kids;
}

/**
 * The process `rootPid` and all its live descendants (root first, then breadth-first). Empty when
 * the root is gone. Zombies are left out: they run no code.
 */
export function listDescendants(rootPid: number, opts: ListOptions = {}): ProcessFact[] {
  if (!validPid(rootPid)) return [];
  if (process.platform === "linux") return listLinux(rootPid, opts);
  if (process.platform === "darwin") return listDarwin(rootPid, opts);
  return [];
}

function listLinux(rootPid: number, opts: ListOptions): ProcessFact[] {
  const root = readStat(rootPid);
  if (root === null || dead(root)) return [];
  const members: { pid: number; st: StatLine }[] = [{ pid: rootPid, st: root }];
  const viaTasks = hasChildrenFiles();
  const kids = viaTasks ? null : childrenViaTable();
  const inTree = new Set([rootPid]);
  for (let i = 0; i < members.length; i++) {
    const parent = members[i]!.pid;
    const children = kids === null ? childrenViaTasks(parent) : (kids.get(parent) ?? []);
    for (const pid of children) {
      if (inTree.has(pid)) continue;
      // Re-read: the table may be up to FULL_SCAN_MS old for this pid.
      const st = readStat(pid);
      if (st === null) {
        table.delete(pid);
        continue;
      }
      table.set(pid, { ppid: st.ppid, startTime: st.startTime });
      if (st.ppid !== parent || dead(st)) continue;
      inTree.add(pid);
      members.push({ pid, st });
    }
  }
  const base = opts.cwd ?? readLink(`/proc/${rootPid}/cwd`) ?? process.cwd();
  const facts: ProcessFact[] = [];
  for (const { pid, st } of members) {
    const cmdline = readProcFile(`/proc/${pid}/cmdline`);
    if (cmdline === null) continue; // exited meanwhile
    const argv = cmdline.split("\0");
    if (argv[argv.length - 1] === "") argv.pop();
    const exe = readLink(`/proc/${pid}/exe`);
    const fact: ProcessFact = {
      pid,
      ppid: st.ppid,
      startTime: st.startTime,
      exe,
      argv,
      exeSha256: null,
      scripts: [],
    };
    if (opts.digest !== undefined) {
      if (exe !== null) fact.exeSha256 = digestOrNull(opts.digest, exe, `/proc/${pid}/exe`);
      const pcwd = readLink(`/proc/${pid}/cwd`) ?? base;
      fact.scripts = digestScripts(opts.digest, scriptsOfProcess(exe, argv, pcwd), base);
    }
    facts.push(fact);
  }
  return facts;
}

function digestOrNull(cache: DigestCache, key: string, openPath?: string): string | null {
  try {
    return cache.digestFileSync(key, openPath ?? key);
  } catch {
    return null;
  }
}

function digestScripts(cache: DigestCache, paths: string[], base: string): FileDigest[] {
  const out: FileDigest[] = [];
  for (const p of paths) {
    const sha = digestOrNull(cache, p);
    if (sha !== null) out.push({ path: displayPath(p, base), sha256: sha });
  }
  return out;
}

function listDarwin(rootPid: number, opts: ListOptions): ProcessFact[] {
  const out = ps(["-A", "-o", "pid=,ppid=,stat=,lstart=,comm="]);
  if (out === null) return [];
  const rows = new Map<number, { ppid: number; stat: string; lstart: string; comm: string }>();
  const kids = new Map<number, number[]>();
  for (const line of out.split("\n")) {
    const m = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+\s+\S+\s+\d+\s+[\d:]+\s+\d+)\s+(.*)$/.exec(line);
    if (m === null) continue;
    const pid = Number(m[1]);
    const ppid = Number(m[2]);
    rows.set(pid, { ppid, stat: m[3]!, lstart: m[4]!, comm: m[5]! });
    const list = kids.get(ppid);
    if (list === undefined) kids.set(ppid, [pid]);
    else list.push(pid);
  }
  const root = rows.get(rootPid);
  if (root === undefined || root.stat.startsWith("Z")) return [];
  const order = [rootPid];
  for (let i = 0; i < order.length; i++) {
    for (const c of kids.get(order[i]!) ?? []) {
      if (!order.includes(c) && !rows.get(c)!.stat.startsWith("Z")) order.push(c);
    }
  }
  const argvs = new Map<number, string[]>();
  const args = ps(["-ww", "-o", "pid=,args=", "-p", order.join(",")]);
  for (const line of (args ?? "").split("\n")) {
    const m = /^\s*(\d+)\s+(.*)$/.exec(line);
    if (m !== null)
      argvs.set(
        Number(m[1]),
        m[2]!.split(/\s+/).filter((w) => w !== ""),
      );
  }
  const base = opts.cwd ?? process.cwd();
  return order.map((pid) => {
    const r = rows.get(pid)!;
    const exe = r.comm.startsWith("/") ? r.comm : null;
    const argv = argvs.get(pid) ?? [r.comm];
    const fact: ProcessFact = {
      pid,
      ppid: r.ppid,
      startTime: lstart(r.lstart),
      exe,
      argv,
      exeSha256: null,
      scripts: [],
    };
    if (opts.digest !== undefined) {
      if (exe !== null) fact.exeSha256 = digestOrNull(opts.digest, exe);
      fact.scripts = digestScripts(opts.digest, scriptsOfProcess(exe, argv, base), base);
    }
    return fact;
  });
}
