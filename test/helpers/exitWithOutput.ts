// A child's end as a test may read it: exited AND its output pipes read to their end.
//
// 'exit' comes when the process is gone, which can be before the last of what it wrote is read
// out of its pipes: a test that awaited 'exit' and then read stderr could miss the last lines on
// a loaded machine (one pipe awaited, another asserted). 'close' (every pipe at its end) has no
// such gap, but it never comes while some other process still holds a pipe's write end: a
// grandchild that inherited it (a shell's background job, a wrapper that forks its server rather
// than exec it, a server a SIGKILLed gateway left running). So the end of the pipes is waited for
// only a bounded time after the exit, and past it the exit is reported with what was read.
import type { ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";

/** The exit of a child process: its code, or the signal that ended it. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * How long after the exit the pipes are waited for when a descendant still holds one: longer than
 * the last read of a loaded machine takes, short enough that a test does not hang on it.
 */
export const OUTPUT_END_GRACE_MS = 5_000;

/**
 * Resolves with the exit of `child` once it has exited and `outputs` (by default its stdout and
 * stderr, those that are pipes) have ended, every 'data' listener having had all of them; or
 * OUTPUT_END_GRACE_MS after the exit when one has not ended by then. Call it before the child can
 * exit (right after spawn): an already exited child is taken as it is, but the ends are listened
 * for from this call on. A stream that nobody reads may never end: pass only streams that are read.
 */
export function exitWithOutput(child: ChildProcess, outputs: Readable[] = pipesOf(child)): Promise<ExitInfo> {
  const ends = Promise.all(outputs.map(ended));
  const exit =
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve<ExitInfo>({ code: child.exitCode, signal: child.signalCode })
      : new Promise<ExitInfo>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  return exit.then(async (info) => {
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, OUTPUT_END_GRACE_MS);
    });
    await Promise.race([ends, grace]);
    clearTimeout(timer);
    return info;
  });
}

/** Resolves once `stream` has ended (its last 'data' emitted) or was destroyed without ending. */
function ended(stream: Readable): Promise<void> {
  if (stream.readableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once("end", () => resolve());
    // destroyed before its end (the SDK's disposal of a probe sibling): nothing more will come
    stream.once("close", () => resolve());
  });
}

/** The child's stdout and stderr, those that are pipes. */
export function pipesOf(child: ChildProcess): Readable[] {
  return [child.stdout, child.stderr].filter((s): s is Readable => s !== null);
}

/** What `capture` has read of a child so far, and its end. */
export interface Captured {
  /** its stdout so far */
  out(): string;
  /** its stderr so far */
  err(): string;
  /** both, in the order this process read them (not always the order written: two pipes) */
  both(): string;
  /** its exit, once its output is read to the end too (exitWithOutput) */
  exited: Promise<ExitInfo>;
}

/**
 * Reads `child`'s stdout and stderr (those that are pipes) as text, decoded as streams (a chunk
 * can end inside a character of several bytes). Call it right after the spawn.
 */
export function capture(child: ChildProcess): Captured {
  let out = "";
  let err = "";
  let both = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => {
    out += s;
    both += s;
  });
  child.stderr?.setEncoding("utf8").on("data", (s: string) => {
    err += s;
    both += s;
  });
  return { out: () => out, err: () => err, both: () => both, exited: exitWithOutput(child) };
}
