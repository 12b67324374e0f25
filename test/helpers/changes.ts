import { afterEach } from "vitest";
import { type ArtifactWatcher, type StaticIdentity, watchArtifacts } from "../../src/identity/index.js";
import { sleep } from "./files.js";

/** The next batch of changed paths an artifact watcher reported into `seen` (taken out of it). */
export async function nextChange(seen: string[][], timeoutMs = 10_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  while (seen.length === 0) {
    if (Date.now() > deadline) throw new Error("no change reported");
    await sleep(25);
  }
  return seen.shift()!;
}

type WatchOptions = NonNullable<Parameters<typeof watchArtifacts>[2]>;

/** One test's artifact watcher (see watcherPerTest). */
export interface TestWatcher {
  /** the batches reported so far, oldest first (next() takes them out) */
  seen: string[][];
  /** a watcher of `s` (debounce as given to watcherPerTest unless `opts` says), reporting into `seen` or to `onChange` */
  start(s: StaticIdentity, opts?: WatchOptions, onChange?: (paths: string[]) => void): ArtifactWatcher;
  /** start(), then its `ready` */
  watch(s: StaticIdentity, opts?: WatchOptions): Promise<ArtifactWatcher>;
  /** the next batch in `seen` (nextChange) */
  next(timeoutMs?: number): Promise<string[]>;
  /** close the watcher started last, now: after the test there is nothing left to close */
  stop(): Promise<void>;
}

/**
 * For a describe block: the artifact watcher each test starts, closed after the test (and `seen`
 * emptied), with `debounceMs` unless a start says otherwise.
 */
export function watcherPerTest(debounceMs: number): TestWatcher {
  const seen: string[][] = [];
  let current: ArtifactWatcher | null = null;
  const stop = async () => {
    await current?.close();
    current = null;
  };
  afterEach(async () => {
    await stop();
    seen.length = 0;
  });
  const start = (
    s: StaticIdentity,
    opts: WatchOptions = {},
    onChange = (paths: string[]) => void seen.push(paths),
  ) => {
    current = watchArtifacts(s, onChange, { debounceMs, ...opts });
    return current;
  };
  return {
    seen,
    start,
    async watch(s, opts) {
      const w = start(s, opts);
      await w.ready;
      return w;
    },
    next: (timeoutMs) => nextChange(seen, timeoutMs),
    stop,
  };
}
