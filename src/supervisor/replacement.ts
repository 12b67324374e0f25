// Replacement detection for a launched server (src/supervisor/supervisor.ts): which processes
// answered for a generation, and whether other code answers for it now — a watcher's new worker,
// or a process that execve()d into other code under the same pid.
import type { ProcessFact } from "../identity/index.js";
import {
  descriptorOf,
  execImage,
  listChildren,
  listDescendants,
  plainExe,
  processStartTime,
  readStat,
  StartTimeProbe,
} from "../identity/proc.js";
import type { Channel } from "./spawn.js";

/** One process that answered for a generation, as it was when the worker first answered. */
export interface SettledProcess {
  pid: number;
  ppid: number;
  /** proc.ts's opaque start time: with the pid, names the process */
  startTime: string;
  /** the executable's path (to recognise a watcher's next worker); null when not known */
  exe: string | null;
  /** its code and stack addresses (StatLine.image: Linux), read on every check; null when not known */
  image: string | null;
  /** its executable's device and inode and its auxiliary vector (execImage: Linux), read by the idle poll */
  exec: string | null;
  /**
   * It was in the middle of an execve when the epoch settled (a helper just started): `image`
   * and `exec` are taken at the first look that sees it whole, as if it had settled then. Read
   * as it was, the half-loaded program would differ from the one it runs a moment later: a
   * replacement by execve that never happened.
   */
  pending: boolean;
  /**
   * It held the gateway's output pipe as its descriptor 1 (the launched process's end, Channel):
   * it wrote into what the gateway reads, so it answered the gateway's requests, whether it read
   * them from its descriptor 0 (`node --watch`, a restart loop) or a watcher passed them on to it
   * (nodemon's default). When it goes away, whatever takes its place answers next. A process that
   * held only the read end (descriptor 0, its output going elsewhere) is a helper whose output
   * its server captures (Python's `subprocess.run(..., capture_output=True)` inherits stdin):
   * its exit leaves the code that answers as it was (docs/identity.md, "Replaced workers").
   */
  answers: boolean;
}

/** What replacement detection reads, and updates, of a generation. */
export interface WatchedGeneration {
  /** the process the supervisor launched */
  child: { readonly pid?: number };
  /** the processes that answered for it, once it answered (null before) */
  settled: SettledProcess[] | null;
  /** settled processes that went away with nothing (yet) in their place */
  departed: SettledProcess[];
  /** the gateway's pipes as the launched process held them; null when not known */
  channel: Channel | null;
}

/**
 * The settled set of a generation: its processes, as they are when its worker first answered,
 * with which of them hold the gateway's pipes (read once here, never on the forwarding path).
 */
export function settledFrom(processes: readonly ProcessFact[], channel: Channel | null): SettledProcess[] {
  return processes.map((p) => {
    const st = readStat(p.pid);
    const pending = st?.execing === true;
    return {
      pid: p.pid,
      ppid: p.ppid,
      startTime: p.startTime,
      exe: plainExe(p.exe),
      image: st?.image ?? null,
      exec: pending ? null : execImage(p.pid),
      pending,
      answers: answersOn(p.pid, channel),
    };
  });
}

/** Whether process `pid` holds the gateway's output pipe as its descriptor 1 (it answers). */
function answersOn(pid: number, channel: Channel | null): boolean {
  return channel !== null && descriptorOf(pid, 1) === channel.output;
}

/** Whether process `pid` holds one of the gateway's pipes as its descriptor 0 or 1. */
function holdsChannel(pid: number, channel: Channel | null): boolean {
  if (channel === null) return false;
  return descriptorOf(pid, 0) === channel.input || descriptorOf(pid, 1) === channel.output;
}

/** replacementOf: the process the supervisor launched is gone (its exit handler reports it). */
export const ROOT_GONE = Symbol("root gone");

/**
 * replacementOf: a settled process that answered on the gateway's pipe is gone and nothing is
 * seen in its place yet; `unknown` says which. Not a replacement (no other code is seen to answer), but
 * not the epoch's code either: a request written now waits in the pipe for whatever reads it next.
 */
export interface CodeUnknown {
  unknown: string;
}

export type Look = string | typeof ROOT_GONE | CodeUnknown | null;

/**
 * One process seen under a generation before its first answer (the provisional set, lookEarly):
 * as last read, with the looks it was first and last seen at.
 */
interface Observed {
  pid: number;
  ppid: number;
  startTime: string;
  exe: string | null;
  argv: readonly string[];
  /** it held the gateway's output pipe as its descriptor 1 at some look (SettledProcess.answers) */
  answers: boolean;
  /** its holding the pipe was reported (EarlyLook.answering) */
  said: boolean;
  /** when it was first seen (performance.now()), for how long it stays a parent's copy (COPY_WINDOW_MS) */
  firstAt: number;
  first: number;
  last: number;
}

/** What lookEarly keeps of a generation not settled yet. */
interface Provisional {
  looks: number;
  seen: Map<string, Observed>;
}

/**
 * lookEarly's verdict: a replacement's detail (or null), the processes first seen answering as
 * their own command, and when to look again soon (a process seen only as its parent's copy), in
 * milliseconds (null: the idle poll's pace is enough).
 */
export interface EarlyLook {
  replaced: string | null;
  answering: { pid: number; exe: string | null }[];
  againMs: number | null;
}

const NOTHING_EARLY: EarlyLook = { replaced: null, answering: [], againMs: null };

/**
 * How long a process seen as its parent's copy (same executable and argv) is looked at again soon,
 * in milliseconds: a watcher's worker between its fork and its execve() shows the watcher's command,
 * and a worker seen only so and swapped before the idle poll's next look (half a second) could not
 * be matched with its successor (earlySuccessor). The looks come at 10 ms, then at twice the time
 * it has been seen; one that stays a copy longer (a shell's subshell, a cluster worker) is taken
 * as it is.
 */
const COPY_WINDOW_MS = 1000;

/**
 * Looks at a generation's settled processes for other code answering in their place. Holds the
 * start-time probe (open /proc files, reused between looks) and remembers what it already looked
 * at in this event-loop turn.
 */
export class ReplacementDetector {
  /** the generation (and settled set) already checked for replacement in this event-loop turn */
  private checkedGen: WatchedGeneration | null = null;
  private checkedSettled: WatchedGeneration["settled"] = null;
  private readonly endTurn = () => {
    this.checkedGen = null;
    this.checkedSettled = null;
  };
  private readonly probe = new StartTimeProbe();
  /** the provisional sets of generations not settled yet (lookEarly) */
  private readonly early = new WeakMap<WatchedGeneration, Provisional>();
  /** the generation already looked at by lookEarly in this event-loop turn */
  private earlyGen: WatchedGeneration | null = null;
  private readonly endEarlyTurn = () => {
    this.earlyGen = null;
  };

  /**
   * Why other code now answers for `gen` (the detail of its "replaced"), ROOT_GONE, CodeUnknown,
   * or null (nothing found, or `gen` was already looked at in this turn). `gen` must be settled.
   */
  look(gen: WatchedGeneration, thorough: boolean): Look {
    // Once per event-loop turn: the requests of one burst share one look (nothing in
    // between can have run a watcher's swap past us that a second look would catch sooner).
    if (this.checkedGen === gen && this.checkedSettled === gen.settled) return null;
    const found = this.replacementOf(gen, thorough);
    if (found !== null) return found;
    if (this.checkedGen === null) process.nextTick(this.endTurn);
    this.checkedGen = gen;
    this.checkedSettled = gen.settled;
    return null;
  }

  close(): void {
    this.probe.close();
  }

  /**
   * Before `gen`'s first answer (its settled set is taken only then): its processes now, added to
   * what earlier looks saw, and whether a watcher swapped its worker meanwhile. A process that
   * held the gateway's output pipe as its descriptor 1 is gone, and a process its parent (still
   * the one seen alongside it) started since it was last seen runs the same executable with the
   * same argv and holds an end of the gateway's pipes: a restart of the same command, which is
   * what a watcher (node --watch, nodemon, a restart loop) does and a wrapper starting the real
   * server (npx, `sh -c "build && node server"`, npm run, tsx) does not: a build step that wrote
   * into the pipe is followed by another command, not by itself again. The command must also run
   * `serverExes` (the launch's executable or runtime, as its identity resolved them; null: any):
   * a wrapper's polling loop (`until nc -z db 5432; do sleep 1; done; node server`) starts the
   * same helper again and again on the same pipe, and runs none of the server's code. Once per
   * event-loop turn (`force`: whatever was looked at in this turn). See docs/identity.md,
   * "Replaced workers".
   */
  lookEarly(gen: WatchedGeneration, serverExes: ReadonlySet<string> | null, force = false): EarlyLook {
    if (gen.channel === null || (!force && this.earlyGen === gen)) return NOTHING_EARLY;
    if (this.earlyGen === null) process.nextTick(this.endEarlyTurn);
    this.earlyGen = gen;
    let prov = this.early.get(gen);
    if (prov === undefined) {
      prov = { looks: 0, seen: new Map() };
      this.early.set(gen, prov);
    }
    const look = ++prov.looks;
    let now: ProcessFact[];
    try {
      now = listDescendants(gen.child.pid!);
    } catch {
      return NOTHING_EARLY;
    }
    if (now.length === 0) return NOTHING_EARLY; // the root is gone: its exit handler's case
    const answering: EarlyLook["answering"] = [];
    const alive = new Set<string>();
    const byPid = new Map(now.map((p) => [p.pid, p]));
    let againMs: number | null = null;
    for (const p of now) {
      const key = `${p.pid}/${p.startTime}`;
      alive.add(key);
      const answers = answersOn(p.pid, gen.channel);
      let o = prov.seen.get(key);
      // read again at each look: one seen between its fork and its execve() shows its parent's
      if (o === undefined) {
        const { pid, ppid, startTime, argv } = p;
        const firstAt = performance.now();
        o = {
          pid,
          ppid,
          startTime,
          argv,
          exe: plainExe(p.exe),
          answers,
          said: false,
          firstAt,
          first: look,
          last: look,
        };
        prov.seen.set(key, o);
      } else {
        o.exe = plainExe(p.exe);
        o.argv = p.argv;
        o.last = look;
        if (answers) o.answers = true;
      }
      const parent = byPid.get(p.ppid);
      const copy = parent !== undefined && plainExe(parent.exe) === o.exe && sameArgv(parent.argv, p.argv);
      const since = performance.now() - o.firstAt;
      if (copy && since < COPY_WINDOW_MS) {
        const wait = Math.max(10, Math.min(since, COPY_WINDOW_MS - since));
        againMs = againMs === null ? wait : Math.min(againMs, wait);
        continue; // what it runs is not known yet: said once it is (or once it stayed a copy)
      }
      if (o.answers && !o.said) {
        o.said = true;
        answering.push({ pid: p.pid, exe: o.exe });
      }
    }
    let replaced: string | null = null;
    for (const [key, d] of prov.seen) {
      if (alive.has(key)) continue;
      // one that never wrote into the gateway's pipe leaves the code that answers as it was
      if (!d.answers) {
        prov.seen.delete(key);
        continue;
      }
      if (serverExes === null || (d.exe !== null && serverExes.has(d.exe)))
        replaced ??= earlySuccessor(d, now, prov, gen.channel);
    }
    return { replaced, answering, againMs };
  }

  /** Why other code now answers for `gen` (the detail of its "replaced"), ROOT_GONE, CodeUnknown, or null. */
  private replacementOf(gen: WatchedGeneration, thorough: boolean): Look {
    const settled = gen.settled!;
    const rootPid = gen.child.pid!;
    const probe = this.probe.for(settled);
    let gone: SettledProcess[] | null = null;
    for (const p of settled) {
      const now = probe(p);
      let alive = now?.startTime === p.startTime;
      if (alive && p.pending) {
        if (!now!.execing) {
          p.image = now!.image;
          p.exec = execImage(p.pid);
          p.pending = false;
        }
        continue;
      }
      if (alive && (now!.image !== p.image || (thorough && execImage(p.pid) !== p.exec))) {
        // Not readable any more: gone since the first read (exiting: its memory already released
        // while its state still says running, its executable unreadable), or it execve()d into
        // something we may not inspect (a setuid program): the latter is other code all the same.
        // Read afresh, not through the probe's held descriptors: one held on the memory of a
        // multi-threaded process reads as alive until its last thread has exited.
        alive = processStartTime(p.pid) === p.startTime;
        if (alive) return `process ${p.pid} now runs other code (execve)`;
      }
      if (alive) continue;
      if (p.pid === rootPid) return ROOT_GONE;
      gone ??= [];
      gone.push(p);
    }
    if (gone !== null) {
      gen.departed.push(...gone);
      gen.settled = settled.filter((p) => !gone.includes(p));
    }
    if (gen.departed.length === 0) return null;
    const successor = successorOf(gen);
    if (successor !== null) return successor;
    // A helper that exits leaves the code that answers as it was; one that wrote into the
    // gateway's pipe was the server's worker (a watcher's, killed): until something is seen in
    // its place, which code reads the next request is not known.
    const worker = gen.departed.find((d) => d.answers);
    return worker ? { unknown: `process ${worker.pid}, which held the gateway's pipe, went away` } : null;
  }
}

/**
 * lookEarly: a process in `now` that took the place of `d` (gone, it held the gateway's output
 * pipe): a child of `d`'s parent, that parent still the one seen while `d` ran, first seen after
 * `d` was last seen, running the same executable with the same argv (both known), and holding an
 * end of the gateway's pipes.
 */
function earlySuccessor(
  d: Observed,
  now: readonly ProcessFact[],
  prov: Provisional,
  channel: Channel,
): string | null {
  const parent = now
    .filter((p) => p.pid === d.ppid)
    .map((p) => prov.seen.get(`${p.pid}/${p.startTime}`))
    .find((seen) => seen !== undefined && seen.first <= d.last);
  if (parent === undefined || d.exe === null) return null;
  // Seen only as its parent's copy (a fork not yet execve()d into its command, a shell's subshell):
  // what it ran is not known, and two such copies at two looks would pass for one command twice.
  if (d.exe === parent.exe && sameArgv(d.argv, parent.argv)) return null;
  for (const k of now) {
    if (k.ppid !== d.ppid) continue;
    const seen = prov.seen.get(`${k.pid}/${k.startTime}`);
    if (seen === undefined || seen.first <= d.last) continue; // it ran alongside `d`: not its successor
    if (plainExe(k.exe) !== d.exe || !sameArgv(k.argv, d.argv)) continue;
    if (!holdsChannel(k.pid, channel)) continue;
    return `process ${d.pid} was replaced before the first answer by process ${k.pid}, the same command started again by process ${d.ppid} (a watcher's new worker, or a restart loop's)`;
  }
  return null;
}

function sameArgv(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((w, i) => w === b[i]);
}

/**
 * A process that took a departed one's place: a child of the same parent (which is still the
 * settled process it was), started since the worker first answered, running the same
 * executable — what a watcher does when it kills its worker and starts the next one. Departed
 * processes stay remembered, so a watcher that starts the next worker only after the old one
 * is gone is still caught. When an executable is not known, any new child counts (deny first).
 * In place of one that answered on the gateway's pipe, a new child holding either end counts
 * whatever it runs: it can read what the gateway writes or answer it (a loop wrapper between two
 * workers, another program).
 */
function successorOf(gen: WatchedGeneration): string | null {
  const known = new Set<string>();
  for (const p of [...gen.settled!, ...gen.departed]) known.add(`${p.pid}/${p.startTime}`);
  const parents = new Set(gen.settled!.map((p) => p.pid));
  const looked = new Map<number, ReturnType<typeof listChildren>>();
  for (const d of gen.departed) {
    if (!parents.has(d.ppid)) continue; // its parent went too: that departure is judged instead
    let kids = looked.get(d.ppid);
    if (kids === undefined) {
      kids = listChildren(d.ppid);
      looked.set(d.ppid, kids);
    }
    for (const k of kids) {
      if (known.has(`${k.pid}/${k.startTime}`)) continue;
      const sameExe = d.exe === null || k.exe === null || k.exe === d.exe;
      if (!sameExe && !(d.answers && holdsChannel(k.pid, gen.channel))) continue;
      return `process ${d.pid} was replaced by process ${k.pid}, a new worker of watcher process ${d.ppid}`;
    }
  }
  return null;
}
