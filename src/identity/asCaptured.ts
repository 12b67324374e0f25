// What a capture saw of the files it hashed fresh (the server's own code: executable, entry,
// wrappers, lockfile, the include patterns' files), kept beside the identity it made, so that the
// artifact watcher, once set up, can tell whether one of them changed after the capture read it and
// before the watcher could see it (watch.ts). No event and no ctime probe covers that stretch: the
// capture's look at each file is over, and inotify was not listening yet.
import { lstatSync, type Stats, statSync } from "node:fs";
import type { IncludeMatch } from "./includeMatch.js";
import type { StaticIdentity } from "./types.js";

/** A file as one stat saw it: through its links (`follow`) or the link itself. */
export interface SeenFile {
  follow: boolean;
  /** size, mtime, ctime and inode: what the digest cache compares too */
  state: string;
}

export function stateKey(st: Pick<Stats, "size" | "mtimeMs" | "ctimeMs" | "ino">): string {
  return `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;
}

/** Absolute path → what the capture that made the identity saw of it. */
export type SeenFiles = ReadonlyMap<string, SeenFile>;

const seenBy = new WeakMap<StaticIdentity, SeenFiles>();

/** Keeps what the capture saw beside the identity it made (never in it: nothing of it is digested or stored). */
export function rememberSeen(s: StaticIdentity, seen: SeenFiles): void {
  seenBy.set(s, seen);
}

function stateNow(abs: string, follow: boolean): string {
  try {
    return stateKey(follow ? statSync(abs) : lstatSync(abs));
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? "EIO";
  }
}

/**
 * The files of `s` that differ now from what its capture read (written, replaced, removed), and
 * the include patterns' files matched now that it did not read (`matchedNow`: the matches taken
 * once the watcher was set up; null without patterns). Asked once, by the first watcher of `s`
 * (which watches from then on), and forgotten: empty afterwards, and for an identity no capture of
 * this process made. One stat per file: the fixed files are a handful, the include files what the
 * user named.
 */
export function changedSinceCapture(s: StaticIdentity, matchedNow: readonly IncludeMatch[] | null): string[] {
  const seen = seenBy.get(s);
  if (seen === undefined) return [];
  seenBy.delete(s);
  const out: string[] = [];
  for (const [abs, was] of seen) if (stateNow(abs, was.follow) !== was.state) out.push(abs);
  for (const m of matchedNow ?? []) if (!seen.has(m.abs)) out.push(m.abs);
  return out;
}
