// The pipes of a launched server's worker (src/supervisor/supervisor.ts): its stdout read as
// messages, its stderr printed as scrubbed lines, its stdin written once per event-loop turn,
// and its orderly end: close stdin → SIGTERM → SIGKILL, the whole process group.
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { LineCoalescer, writesAfterRead } from "../relay/coalesce.js";
import { type FramingEvents, LineReader } from "../relay/framing.js";
import { signalChildGroup } from "./groupSignal.js";
import { type LineScrubber, StderrLines } from "./stderrLines.js";

export interface PipeOptions {
  maxMessageBytes?: number;
  /** the server's label, in front of each line of its stderr */
  label: string;
  /** SupervisorOptions.stderrScrub */
  scrub: LineScrubber | null;
  /**
   * A pipe the gateway talks to the worker through is gone (`detail`: which, in words): its
   * stdout ended, or a write to its stdin failed (EPIPE: nothing reads it any more). Also what
   * happens when the worker exits, a moment before its exit is seen: see `exitsWithin`.
   */
  pipeLost(detail: string): void;
}

/**
 * How much written to a worker may wait for it to read before it is sent no more requests
 * (Supervisor.notReading): a server that stops reading its stdin would otherwise have every
 * request the client sends kept in the gateway's memory.
 */
export const STDIN_BACKLOG_BYTES = 4 * 1024 * 1024;

/** How much of the workers' stderr may wait to be written to ours before they are no longer read. */
export const STDERR_BACKLOG_BYTES = 1024 * 1024;

/** Each worker's stdin, written once per event-loop turn. */
const writers = new WeakMap<ChildProcessWithoutNullStreams, LineCoalescer>();

/** Starts reading the worker's output: its messages go to `messages`, its stderr to ours. */
export function readPipes(
  child: ChildProcessWithoutNullStreams,
  messages: FramingEvents,
  o: PipeOptions,
): void {
  const reader = new LineReader(messages, o.maxMessageBytes);
  // the answers a chunk carries are relayed as it is read (coalesce.ts)
  child.stdout.on(
    "data",
    writesAfterRead((b) => reader.push(b)),
  );
  child.stdout.on("end", () => {
    reader.end();
    o.pipeLost("closed its stdout");
  });
  const errLines = new StderrLines((shown) => process.stderr.write(`[${o.label}] ${shown}\n`), o.scrub);
  child.stderr.on("data", (b: Buffer) => {
    errLines.push(b);
    // Our stderr is a pipe nobody reads fast enough (or at all): the worker's stderr is left
    // unread until it drains, so a flood waits in the worker, not in the gateway's memory.
    const ours = process.stderr;
    if (ours.destroyed || ours.writableLength < STDERR_BACKLOG_BYTES || child.stderr.isPaused()) return;
    child.stderr.pause();
    const resume = () => {
      ours.off("drain", resume);
      ours.off("close", resume); // the host went away: what is left is dropped (log.ts)
      child.stderr.resume();
    };
    ours.on("drain", resume);
    ours.on("close", resume);
  });
  child.stderr.on("end", () => errLines.end());
  // EPIPE: the worker closed its stdin, or died with our write in flight (its exit then follows)
  child.stdin.on("error", (e: NodeJS.ErrnoException) =>
    o.pipeLost(`closed its stdin (${e.code ?? e.message})`),
  );
  writers.set(child, new LineCoalescer(child.stdin));
}

/**
 * How much written to the worker waits for it to read (bytes, about): what its stdin's stream
 * holds and what this event-loop turn queued. A worker that reads none of its input leaves it all
 * in the gateway's memory.
 */
export function stdinBacklog(child: ChildProcessWithoutNullStreams): number {
  return child.stdin.writableLength + (writers.get(child)?.pendingLength ?? 0);
}

/** Writes one serialised message (one line, no newline) to the worker. */
export function writeLine(child: ChildProcessWithoutNullStreams, text: string): void {
  // Coalesced: the messages of one event-loop turn reach the worker in one write.
  const w = writers.get(child);
  if (w) w.write(text);
  else child.stdin.write(`${text}\n`);
}

/** Ends the worker: close stdin → SIGTERM → SIGKILL (each after `graceMs`), the whole process group. */
export async function stopChild(child: ChildProcessWithoutNullStreams, graceMs: number): Promise<void> {
  const waitExit = (ms: number) => exitsWithin(child, ms);
  // Already exited and reaped: its pid is free and may name someone else's process group now (a
  // long pause after a crash loop). What is left of its group is ProcessGroups' to end, behind
  // its start-time check; nothing is sent here by a number that may no longer be the server's.
  if (child.exitCode !== null || child.signalCode !== null) return;
  writers.get(child)?.flush(); // what was sent before the close still goes out
  child.stdin.end();
  if (!(await waitExit(graceMs))) {
    signalChildGroup(child, "SIGTERM");
    if (!(await waitExit(graceMs))) {
      signalChildGroup(child, "SIGKILL");
      await waitExit(graceMs);
    }
  }
  // Anything left in the group. The server has most often exited and been reaped by now: with
  // nothing else left in its group, its pid is free, and a process started meanwhile may have
  // been given it and lead a group of its own. The signal is checked against the server's start
  // time (groupSignal.ts), as every signal to a group is.
  signalChildGroup(child, "SIGKILL");
}

/**
 * Whether the worker exits within `ms`. Its exit is read after the event loop's poll phase that
 * follows the timer (setImmediate): an exit that happened before the timeout but is reported in
 * the same turn (a loop busy for longer than `ms`) counts as an exit, not as a worker still running.
 */
export function exitsWithin(child: ChildProcessWithoutNullStreams, ms: number): Promise<boolean> {
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  return new Promise<boolean>((resolve) => {
    if (exited()) return resolve(true);
    const onExit = () => {
      clearTimeout(t);
      resolve(true);
    };
    const t = setTimeout(() => {
      setImmediate(() => {
        child.off("exit", onExit);
        resolve(exited());
      });
    }, ms);
    child.once("exit", onExit);
  });
}
