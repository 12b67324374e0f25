import { isAbsolute, join, relative, sep } from "node:path";
import { sameJson } from "../util/canonical.js";
import type { StaticIdentity } from "./types.js";

/**
 * Of the files the watcher saw written, those whose content the two identities say changed: a
 * build (or `npm install`) rewrites many files with the bytes they had, and a status line or an
 * `artifact_changed` record naming them would say they changed when they did not. Only what the
 * identities hold is used, nothing is read again: the entry, each wrapper, the lockfile and the
 * executable have a digest each, so a path that is one of them is kept when its digest changed;
 * a dependency tree, a linked package and the include patterns' files have one digest per tree,
 * so a path inside one is kept when that tree's digest changed (then every file written in it is
 * named, the same bytes or not). A path none of them accounts for (a link on the way to a file)
 * is kept. Paths as the watcher names them: relative to the working directory when inside it.
 */
export function contentChangedPaths(
  paths: readonly string[],
  before: StaticIdentity,
  after: StaticIdentity,
): string[] {
  const cwd = after.workingDirectory;
  const abs = (p: string) => (isAbsolute(p) ? p : join(cwd, p));
  const files = new Map<string, boolean>();
  const file = (b: { path: string; sha256: string } | null, a: { path: string; sha256: string } | null) => {
    for (const x of [b, a]) if (x) files.set(abs(x.path), !sameJson(b ?? null, a ?? null));
  };
  file(before.entry, after.entry);
  file(before.lockfile, after.lockfile);
  file(before.executable, after.executable);
  const wrappers = new Set([...before.wrappers, ...after.wrappers].map((w) => w.path));
  for (const w of wrappers)
    file(before.wrappers.find((x) => x.path === w) ?? null, after.wrappers.find((x) => x.path === w) ?? null);
  const trees: { root: string; changed: boolean }[] = [];
  const bt = before.dependencyTree;
  const at = after.dependencyTree;
  for (const root of new Set([bt?.root, at?.root].filter((r): r is string => r !== undefined))) {
    const digest = (t: typeof bt) => (t && t.root === root ? t.sha256 : null);
    trees.push({ root: abs(root), changed: digest(bt) !== digest(at) });
  }
  const bm = new Map((bt?.more ?? []).map((m) => [m.path, m.sha256]));
  const am = new Map((at?.more ?? []).map((m) => [m.path, m.sha256]));
  for (const p of new Set([...bm.keys(), ...am.keys()]))
    trees.push({ root: abs(p), changed: bm.get(p) !== am.get(p) });
  const inputsChanged = !sameJson(before.identityInputs ?? null, after.identityInputs ?? null);
  const inside = (p: string, root: string) => {
    const r = relative(root, p);
    return r === "" || (!r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r));
  };
  return paths.filter((p) => {
    const a = abs(p);
    const known = files.get(a);
    if (known !== undefined) return known;
    // the innermost tree decides: a linked package's own node_modules sits inside it
    const tree = trees.filter((t) => inside(a, t.root)).sort((x, y) => y.root.length - x.root.length)[0];
    if (tree) return tree.changed;
    if (before.identityInputs !== null || after.identityInputs !== null) return inputsChanged;
    return true;
  });
}
