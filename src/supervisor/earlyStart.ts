// A server spawned before the gateway has loaded the rest of itself (src/cli/run.ts). Its process
// boots on one core while the gateway loads its modules and opens its store on the other; the
// supervisor's first launch then takes it and captures its identity as for any launch
// (spawnAndCapture: a file changed since the spawn has it killed and launched again the careful
// way). Nothing is sent to it before its epoch is up, as for any launch. A gateway that fails to
// start ends it, never having written it a byte.
import { signalChildGroup } from "./groupSignal.js";
import { discard, type SpawnSpec, type Started, spawnServer } from "./spawn.js";

export class EarlyStart {
  readonly started: Started;
  /** taken by a launch, or ended: either way no longer this object's to end */
  private done = false;
  private guarded: readonly NodeJS.Signals[];

  /**
   * Spawns the server now. Until `unguard` (the gateway's own signal handlers are in place), a
   * signal ends the server's process group (its own: a terminal's Ctrl-C never reaches it) before
   * the gateway dies of it, instead of leaving the server running with nobody to end it.
   */
  constructor(
    readonly spec: SpawnSpec,
    signals: readonly NodeJS.Signals[],
  ) {
    // guarded first: the process runs as soon as it is spawned, and may be seen (and the gateway
    // signalled) before spawnServer returns
    this.guarded = signals;
    for (const s of signals) process.once(s, this.onSignal);
    this.started = spawnServer(spec);
  }

  private readonly onSignal = (signal: NodeJS.Signals): void => {
    this.unguard();
    this.done = true;
    // a server that crashed early is reaped, and its pid may lead another group by now: checked
    signalChildGroup(this.started.child, "SIGKILL");
    process.kill(process.pid, signal); // nothing listens now: the default action, as without us
  };

  /** The gateway's own signal handlers take over (they end whatever the supervisor holds). */
  unguard(): void {
    for (const s of this.guarded) process.off(s, this.onSignal);
    this.guarded = [];
  }

  /**
   * The process, for the first launch of `spec` with nothing added to its environment at the
   * spawn; null when it was spawned otherwise (it is ended), already taken or ended.
   */
  take(spec: SpawnSpec, extra: Record<string, string>): Started | null {
    if (this.done) return null;
    this.done = true;
    this.unguard();
    if (Object.keys(extra).length === 0 && sameSpawn(spec, this.spec)) return this.started;
    void discard(this.started);
    return null;
  }

  /** Ends the process unless a launch took it. */
  async abandon(): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.unguard();
    await discard(this.started);
  }
}

function sameSpawn(a: SpawnSpec, b: SpawnSpec): boolean {
  return (
    a.command === b.command &&
    a.cwd === b.cwd &&
    sameList(a.args, b.args) &&
    sameList(Object.entries(a.env).sort(byKey).flat(), Object.entries(b.env).sort(byKey).flat())
  );
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function byKey(a: [string, string], b: [string, string]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}
