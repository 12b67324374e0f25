/**
 * Where a change lies in a schema: the dotted path a diff writes (childPath), read back without a
 * regular expression (pathSegments, lastSegment: a key is the server's, megabytes long), and the
 * property a path ends in (fieldName); with the two reads every part of the diff makes of a
 * schema's own properties (isObj, own). Apart from the diff: paths are read by the summaries,
 * the review and the redaction of shown values too.
 */
import { clip } from "./text.js";

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Own property only: a key such as "__proto__" or "constructor" never reads the prototype. */
export function own(o: unknown, k: string): unknown {
  return isObj(o) && Object.hasOwn(o, k) ? o[k] : undefined;
}

/** Appends a property or keyword to a dotted path; odd names are JSON-quoted in brackets. */
export function childPath(path: string, key: string): string {
  const seg = /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key) ? key : `[${JSON.stringify(key)}]`;
  if (path === "") return seg.startsWith("[") ? seg : seg;
  return seg.startsWith("[") ? `${path}${seg}` : `${path}.${seg}`;
}

/**
 * The name a path ends in: after its last `.` (when nothing after it is a `.`, `[` or `]`), or its
 * last `["…"]` key; else the path itself. Read by a loop (pathSegments), not by a regular
 * expression: a key is the server's, as long as a catalog allows (megabytes), and a regex's
 * `(?:[^"\\]|\\.)*` over it kept a backtracking entry per character and threw RangeError
 * ("Maximum call stack size exceeded") on 8 MiB, which made the catalog's diff, and the revision
 * it is recorded with, fail.
 */
function lastSegment(path: string): string {
  const dot = path.lastIndexOf(".");
  if (dot >= 0 && dot < path.length - 1 && !/[.[\]]/.test(path.slice(dot + 1))) return path.slice(dot + 1);
  if (!path.endsWith('"]')) return path;
  const last = pathSegments(path).at(-1);
  return last?.quoted && last.end === path.length ? last.name : path;
}

/** One segment of a path as childPath writes it: a name, a `["…"]` key (`quoted`), or an index (name ""). */
interface PathSegment {
  name: string;
  quoted: boolean;
  /** where it ends in the path */
  end: number;
}

/**
 * The segments of a path as childPath writes it (`a.b["odd key"].anyOf[0]`), read by a loop in
 * one pass (see lastSegment); what is none (a stray character) is skipped. A `["…"]` whose JSON
 * does not parse is named by its text.
 */
export function pathSegments(path: string): PathSegment[] {
  const out: PathSegment[] = [];
  let i = 0;
  while (i < path.length) {
    const c = path[i]!;
    if (c === "[" && path[i + 1] === '"') {
      let j = i + 2;
      while (j < path.length && path[j] !== '"') j += path[j] === "\\" ? 2 : 1;
      if (j >= path.length || path[j + 1] !== "]") {
        i++;
        continue;
      }
      const text = path.slice(i + 1, j + 1);
      let name = text;
      try {
        name = JSON.parse(text) as string;
      } catch {}
      out.push({ name, quoted: true, end: j + 2 });
      i = j + 2;
    } else if (c === "[") {
      let j = i + 1;
      while (j < path.length && path.charCodeAt(j) >= 48 && path.charCodeAt(j) <= 57) j++;
      if (j > i + 1 && path[j] === "]") {
        out.push({ name: "", quoted: false, end: j + 1 }); // an index: a branch or a tuple item, no name
        i = j + 1;
      } else i++;
    } else if (c === "." || i === 0) {
      const start = c === "." ? i + 1 : i;
      let j = start;
      if (j < path.length && IDENT_START.test(path[j]!)) {
        j++;
        while (j < path.length && IDENT_PART.test(path[j]!)) j++;
        out.push({ name: path.slice(start, j), quoted: false, end: j });
        i = j;
      } else i++;
    } else i++;
  }
  return out;
}

const IDENT_START = /[A-Za-z_$]/;
const IDENT_PART = /[A-Za-z0-9_$-]/;

/** The property a path ends in, as a summary line names it (shortened: a key may be huge). */
export function fieldName(path: string): string {
  return clip(lastSegment(path), NAME_SHOWN);
}

/**
 * A property name inside a summary line: a server may make it as long as it likes. Above what
 * displayName gives for a long name, so a name it already shortened is not cut again.
 */
export const NAME_SHOWN = 200;
