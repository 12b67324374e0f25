import {
  type ArtifactWatcher,
  forgetSeen,
  type StaticIdentity,
  watchArtifacts,
  watchedPaths,
} from "../identity/index.js";

/**
 * The files the artifact watcher watches, kept in step with the code that runs. The launch spec
 * never changes, but what it resolves to can at any launch: a wrapper script rewritten to exec
 * another entry, an npm start script or package.json `main` pointing elsewhere. So the set is
 * taken from the identity captured at each launch, and a launch whose set differs gets a new
 * watcher; the same set keeps the watcher it has (it was watching throughout that launch).
 */
export class WatchedSet {
  private watcher: ArtifactWatcher | null = null;
  private key: string | null = null;
  private empty = true;

  /**
   * `onChange`: a batch of changed paths (see watchArtifacts). `onStirred`: a batch opened
   * (true) or was handed over, found empty or dropped (false); a watcher replaced by `follow`
   * closes its own open batch, so the calls always pair up. `onUnseen`: the stat poll found a
   * change made at some moment after `since` (watchArtifacts' `unseen`).
   */
  constructor(
    private readonly onChange: (paths: string[]) => void,
    private readonly onStirred: (open: boolean) => void = () => {},
    private readonly onUnseen: (since: number) => void = () => {},
  ) {}

  /**
   * Watches what `stat` depends on. True when this replaced the watcher of another set: the new
   * one is live (set up synchronously) before the old one is closed, so a file in both sets is
   * watched throughout; a change the new set's files saw between their digest and now is no
   * watcher's to report, and the caller compares a fresh capture with `stat` to find it.
   */
  follow(stat: StaticIdentity): boolean {
    // What the capture saw is for the first watcher's look only (it names every file of the
    // linked packages): no other launch asks for it, so it is dropped here, not kept with the epoch.
    if (this.watcher !== null) forgetSeen(stat);
    const paths = watchedPaths(stat);
    const key = setKey(paths);
    if (this.watcher !== null && key === this.key) return false;
    const old = this.watcher;
    // The first watcher compares the server's own files with what the launch's capture saw; a
    // replacing one does not: the caller compares a whole fresh capture (see above).
    this.watcher = watchArtifacts(stat, this.onChange, {
      stirred: this.onStirred,
      unseen: this.onUnseen,
      sinceCapture: old === null,
    });
    this.key = key;
    this.empty = paths.files.length === 0 && paths.dirs.length === 0;
    if (old === null) return false;
    void old.close().catch(() => {});
    return true;
  }

  /** Whether a file the running code depends on is watched (a change of it can be seen). */
  get watching(): boolean {
    return this.watcher !== null && !this.empty;
  }

  async close(): Promise<void> {
    const w = this.watcher;
    this.watcher = null;
    await w?.close().catch(() => {});
  }
}

/** The watched set as one comparable string (order does not matter). */
function setKey(p: ReturnType<typeof watchedPaths>): string {
  const dirs = p.dirs.map((d) => `${d.depth}:${d.path}`);
  return JSON.stringify([[...p.files].sort(), dirs.sort()]);
}
