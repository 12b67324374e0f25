// The process groups of every server a supervisor launched (src/supervisor/supervisor.ts): a dead
// generation's group is ended after a grace period, and every earlier one at shutdown.
import { type Leader, signalLaunchedGroup } from "./groupSignal.js";

export class ProcessGroups {
  /**
   * The process group of every server launched (its pgid is the launched process's pid), with
   * that process's leader record (groupSignal.ts: its start time as read at its spawn, what was
   * left of its group when it was reaped), until the group has been sent SIGKILL: a dead
   * generation's leftovers can ignore SIGTERM.
   */
  private readonly groups = new Map<number, Leader>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** set by killAll: a shutdown waits no longer for any group to end on its own */
  private hurried = false;

  constructor(private readonly graceMs: number) {}

  /**
   * A server was launched: its process group (named by its pid) is ours until it is killed.
   * `leader`: its record made at the spawn (groupSignal.ts, recordLeader); a start time read any
   * later may be another process's that took the pid of a server already reaped.
   */
  launched(leader: Leader): void {
    this.groups.set(leader.pid, leader);
  }

  /**
   * A dead generation's process group: SIGTERM now, SIGKILL after the grace period if anything
   * is left in it. A child that ignores SIGTERM would otherwise outlive its server, the respawn
   * and the gateway, holding whatever was in its environment (delivered credentials).
   */
  end(pgid: number): void {
    const started = this.groups.get(pgid);
    this.signal(pgid, "SIGTERM");
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      // The group emptied, its number may have been taken by the next server launched (the pid
      // of a group is free once no member is left, and a busy machine reuses pids within the
      // grace): that launch's entry replaced this one, and its leader would pass `signal`'s
      // check. The SIGKILL is for the group ended here only.
      if (this.groups.get(pgid) !== started) return;
      this.signal(pgid, "SIGKILL");
      this.groups.delete(pgid);
    }, this.graceMs);
    timer.unref();
    this.timers.add(timer);
  }

  /** Shutdown: the SIGKILLs still waiting for a grace period are dropped (endNow takes over). */
  cancelPending(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** Every group not yet sent SIGKILL. */
  pgids(): number[] {
    return [...this.groups.keys()];
  }

  /** Earlier generations' groups at shutdown: SIGTERM, then SIGKILL once the grace is over, if any member is left. */
  async endNow(pgids: number[]): Promise<void> {
    let left = pgids.filter((g) => this.signal(g, "SIGTERM"));
    const deadline = Date.now() + this.graceMs;
    while (left.length > 0 && Date.now() < deadline && !this.hurried) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      left = left.filter((g) => this.signal(g, 0));
    }
    for (const g of left) this.signal(g, "SIGKILL");
  }

  /**
   * A hurried shutdown (a second signal to the gateway): SIGKILL now to every group not yet sent
   * it, the current server's included, rather than at the end of a grace it would outlive if the
   * gateway exited first. A shutdown under way stops waiting for SIGTERM to work (endNow).
   */
  killAll(): void {
    this.hurried = true;
    this.cancelPending();
    for (const g of this.pgids()) this.signal(g, "SIGKILL");
  }

  /** Forgets every group (supervision is over). */
  clear(): void {
    this.groups.clear();
  }

  /**
   * Signals a group this supervisor launched, unless the number now names someone else's
   * (groupSignal.ts): then the group is forgotten, nothing of ours being left in it.
   */
  private signal(pgid: number, signal: NodeJS.Signals | 0): boolean {
    if (!this.groups.has(pgid)) return false;
    const done = signalLaunchedGroup(this.groups.get(pgid)!, signal);
    if (done === "another") this.groups.delete(pgid);
    return done === "sent";
  }
}
