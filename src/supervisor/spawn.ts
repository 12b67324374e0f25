// Spawning a server process, and ending one that never got a message. Kept apart from the
// supervisor and free of heavy imports: `portcullis run` spawns the server with it before it loads
// the gateway's modules, so the server boots while the gateway does (src/cli/run.ts).
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";

export class LaunchError extends Error {
  override name = "LaunchError";
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

/** The signals a gateway ends on (serve installs its own handlers for them once it runs). */
const ENDING_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
const SIGNAL_EXIT: Record<(typeof ENDING_SIGNALS)[number], number> = {
  SIGHUP: 129,
  SIGINT: 130,
  SIGTERM: 143,
};

/**
 * A server spawned ahead of its supervisor (before the gateway's modules are loaded). Until a
 * supervisor takes it, a gateway that ends for any reason (an error in its start, a signal that
 * arrives before its own handlers exist) kills the server's process group first: it never runs
 * unsupervised.
 */
export class EarlyStart {
  private taken = false;
  private readonly kill = () => {
    if (!this.taken && this.started.child.pid !== undefined) killGroup(this.started.child.pid, "SIGKILL");
  };
  private readonly onSignal = (signal: (typeof ENDING_SIGNALS)[number]) => {
    this.kill();
    // alone, this handler would keep the gateway alive: do what the signal would have done
    if (process.listenerCount(signal) === 1) process.exit(SIGNAL_EXIT[signal]);
  };

  private constructor(
    /** what it was spawned from (a copy) */
    readonly spec: SpawnSpec,
    readonly started: Started,
  ) {
    process.once("exit", this.kill);
    for (const sig of ENDING_SIGNALS) process.on(sig, this.onSignal);
  }

  static spawn(spec: SpawnSpec): EarlyStart {
    const copy = { command: spec.command, args: [...spec.args], cwd: spec.cwd, env: { ...spec.env } };
    return new EarlyStart(copy, spawnServer(copy));
  }

  /** Whether it is exactly the process `spec` plus `extra` would spawn: the same argv, cwd and environment. */
  matches(spec: SpawnSpec, extra: Record<string, string>): boolean {
    const env = { ...spec.env, ...extra };
    const mine = this.spec.env;
    const keys = Object.keys(env);
    return (
      spec.command === this.spec.command &&
      spec.cwd === this.spec.cwd &&
      spec.args.length === this.spec.args.length &&
      spec.args.every((a, i) => a === this.spec.args[i]) &&
      keys.length === Object.keys(mine).length &&
      keys.every((k) => Object.hasOwn(mine, k) && mine[k] === env[k])
    );
  }

  /** The supervisor's: from now on, it ends the process. */
  take(): Started {
    this.taken = true;
    process.off("exit", this.kill);
    for (const sig of ENDING_SIGNALS) process.off(sig, this.onSignal);
    return this.started;
  }

  /** Not used after all (the gateway could not start): ends it. */
  async cancel(): Promise<void> {
    if (this.taken) return;
    this.take();
    await discard(this.started);
  }
}
