/**
 * A progress line on stderr for long work, redrawn in place at most every REDRAW_MS and erased
 * when the work ends. Only on a terminal: a pipe or a log file gets nothing.
 */
const REDRAW_MS = 250;
/** Work shorter than this shows no progress at all. */
const QUIET_MS = 1000;

export interface Progress {
  update(count: number): void;
  done(): void;
}

export function stderrProgress(
  what: (count: number) => string,
  timing: { quietMs?: number; redrawMs?: number } = {},
): Progress {
  if (!process.stderr.isTTY) return { update() {}, done() {} };
  const quietMs = timing.quietMs ?? QUIET_MS;
  const redrawMs = timing.redrawMs ?? REDRAW_MS;
  const started = Date.now();
  let drawnAt = 0;
  let drawn = false;
  return {
    update(count) {
      const now = Date.now();
      if (now - started < quietMs || now - drawnAt < redrawMs) return;
      drawnAt = now;
      drawn = true;
      process.stderr.write(`\r\x1b[K${what(count)}`);
    },
    done() {
      if (drawn) process.stderr.write("\r\x1b[K");
      drawn = false;
    },
  };
}
