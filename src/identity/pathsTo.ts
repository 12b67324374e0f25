import { lstatSync, readlinkSync } from "node:fs";
import { dirname, isAbsolute, join, sep } from "node:path";

/** More symlinks than this on one path: the kernel's ELOOP; the rest is not followed. */
const MAX_LINKS = 40;

/**
 * The paths a change to the file at `p` can be made through: `p` itself, every symlink met
 * while resolving it (each named by its real directory, so a retargeted link is seen as an
 * event in that directory), and the real file. A file is watched through its directory by name,
 * and an edit of a link's target happens in the target's directory under the target's name:
 * watching `p` alone misses it (`node link.mjs`, `dist -> build/out`). What cannot be resolved
 * (missing, a loop) is left as far as it got: the next capture sees what it is then.
 */
export function pathsTo(p: string): string[] {
  const out = [p];
  if (sep !== "/") return out; // drive letters and junctions: not walked here
  let todo = p.split(sep).filter((x) => x !== "");
  let cur: string = sep;
  let links = 0;
  while (todo.length > 0) {
    const name = todo.shift()!;
    if (name === ".") continue;
    if (name === "..") {
      cur = dirname(cur);
      continue;
    }
    const next = join(cur, name);
    let isLink: boolean;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch {
      return out;
    }
    if (!isLink) {
      cur = next;
      continue;
    }
    if (++links > MAX_LINKS) return out;
    out.push(next);
    let target: string;
    try {
      target = readlinkSync(next);
    } catch {
      return out;
    }
    if (isAbsolute(target)) cur = sep;
    todo = [...target.split(sep).filter((x) => x !== ""), ...todo];
  }
  out.push(cur);
  return out;
}
