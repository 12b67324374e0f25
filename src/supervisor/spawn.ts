// Spawning a server process, and ending one that never got a message (src/supervisor/supervisor.ts).
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";

export class LaunchError extends Error {
  override name = "LaunchError";
  /** true: the launch was given up because the gateway is shutting down, not because it failed */
  constructor(
    message: string,
    readonly abandoned = false,
  ) {
    super(message);
  }
}

/** What a spawn needs: the launch spec's process part. */
export interface SpawnSpec {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/** A spawned server process whose output nobody reads yet. */
export interface Started {
  child: ChildProcessWithoutNullStreams;
  /** when it was spawned: the record's startedAt */
  startedAt: string;
  /** the same instant, ms since the epoch: files changed after it may not be what it loaded */
  startedAtMs: number;
  /** resolves once the process exists; rejects with a LaunchError when it could not start */
  spawned: Promise<ChildProcessWithoutNullStreams>;
}

/**
 * Spawns the server in a process group of its own (shutdown reaches every descendant), with
 * pipes on stdin, stdout and stderr that nothing reads until its generation is wired: no
 * message reaches it before its execution record exists.
 */
export function spawnServer(spec: SpawnSpec, extra: Record<string, string> = {}): Started {
  const startedAtMs = Date.now();
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    env: { ...spec.env, ...extra },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  const spawned = new Promise<ChildProcessWithoutNullStreams>((resolve, reject) => {
    child.once("spawn", () => resolve(child));
    child.once("error", (err: NodeJS.ErrnoException) => {
      reject(
        new LaunchError(
          err.code === "ENOENT"
            ? `cannot start "${spec.command}": command not found (cwd ${spec.cwd}).`
            : `cannot start "${spec.command}": ${err.message}.`,
        ),
      );
    });
  });
  spawned.catch(() => {}); // awaited later, or discarded: never an unhandled rejection
  child.stdin.on("error", () => {
    /* EPIPE when it dies with a write in flight: the exit handler reports it */
  });
  return { child, spawned, startedAt: new Date(startedAtMs).toISOString(), startedAtMs };
}

export function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* ESRCH: the group is already gone */
  }
}

/** Ends a server spawned for a launch that did not go through (no message was ever sent to it). */
export async function discard(started: Started): Promise<void> {
  const { child } = started;
  if (child.pid === undefined) return; // the spawn itself failed
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
  killGroup(child.pid, "SIGKILL");
  child.stdout.destroy();
  child.stderr.destroy();
  await exited;
}
