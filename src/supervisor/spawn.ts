// Spawning a server process, and ending one that never got a message (src/supervisor/supervisor.ts).
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { descriptorOf } from "../identity/proc.js";
import { recordLeader, signalChildGroup } from "./groupSignal.js";

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
  /** the gateway's pipes as the launched process holds them (see Channel); null when not known */
  channel: Channel | null;
}

/**
 * The pipes the gateway gave the process it launched, named as the kernel names that process's
 * ends (descriptorOf): any process of the server's tree holding the same end reads what the
 * gateway writes (`input`) or writes what the gateway reads (`output`). Read right after the
 * spawn, when those descriptors are still the ones the gateway set up (Linux only).
 */
export interface Channel {
  input: string;
  output: string;
}

/** A pipe or socket end: what the gateway's pipes are (a path or /dev/null is something else). */
const PIPE_END = /^(?:pipe|socket):\[\d+\]$/;

function channelOf(pid: number | undefined): Channel | null {
  if (pid === undefined) return null;
  const input = descriptorOf(pid, 0);
  const output = descriptorOf(pid, 1);
  // The program runs by now: one that already pointed its descriptors elsewhere (a shell's
  // `exec <file`) leaves the gateway's pipes unknown here, and they are not guessed.
  if (input === null || output === null || !PIPE_END.test(input) || !PIPE_END.test(output)) return null;
  return { input, output };
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
  // its start time while its pid is surely its own: what every later signal to its group is checked against
  recordLeader(child);
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
  // spawn() returns once the program is exec'd: its descriptors 0 and 1 are still the gateway's
  const channel = channelOf(child.pid);
  return { child, spawned, startedAt: new Date(startedAtMs).toISOString(), startedAtMs, channel };
}

/** Ends a server spawned for a launch that did not go through (no message was ever sent to it). */
export async function discard(started: Started): Promise<void> {
  const { child } = started;
  if (child.pid === undefined) return; // the spawn itself failed
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
  // It may have exited long before (a crash while its identity was captured) and been reaped, its
  // pid then free for another process's group: the signal is checked (groupSignal.ts).
  signalChildGroup(child, "SIGKILL");
  child.stdout.destroy();
  child.stderr.destroy();
  await exited;
}
