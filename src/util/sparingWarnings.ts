/**
 * Warnings another party can make the gateway write as often as it likes (another user's process
 * connecting again and again to a front or proxy that closes it unread): each kind is written at
 * once the first time, then at most once a minute, with how many were left unwritten since. The
 * refusals themselves are not thinned: only their lines, so a loop of connections cannot fill the
 * host's log or the disk under it. No timer: a count left over is told with the next line of its
 * kind (a burst that stops leaves its count unsaid until the next one, which then says it).
 */
export class SparingWarnings {
  private readonly kinds = new Map<string, { at: number; unsaid: number }>();

  constructor(
    private readonly warn: (line: string) => void,
    private readonly everyMs = 60_000,
  ) {}

  /** `line`, of kind `kind` (what makes two lines the same warning: a uid, a cause). */
  say(kind: string, line: string): void {
    const now = Date.now();
    const last = this.kinds.get(kind);
    if (last !== undefined && now - last.at < this.everyMs) {
      last.unsaid++;
      return;
    }
    const unsaid = last?.unsaid ?? 0;
    this.kinds.set(kind, { at: now, unsaid: 0 });
    this.warn(
      unsaid === 0
        ? line
        : `${line} (and ${unsaid} more like it since the last such line, ${Math.round((now - last!.at) / 1000)} s ago, not written)`,
    );
  }
}
