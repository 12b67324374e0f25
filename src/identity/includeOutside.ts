// A file an include pattern matched outside every directory it names (includeMatch.ts). The glob
// library walks from above the working directory when a negation opens with `..`
// (`!../old/**`), and a wildcard that reads `..` as a name (`.?/**`, `?./**`, `[.][.]/**`,
// `@(*)/**`) matched `../a/x.js` up there, a file the pattern does not name: it was digested,
// but not watched (the watcher watches the pattern's bases) and never judged for its reach
// (includeReach.ts judges the bases). Deny first: the capture refuses the launch, naming where
// the pattern was given, the pattern and the file, as a group that climbs is refused (include.ts).
import { includeSource } from "./include.js";
import type { IncludeMatches } from "./includeMatch.js";

/** The sentence refusing the first file matched outside its pattern's bases, or null when none is. */
export function outsideRefusal(cwd: string, m: IncludeMatches): string | null {
  const first = m.outside[0];
  if (first === undefined) return null;
  const where = includeSource(cwd, first.pattern) ?? "identity.include";
  const bases = [...new Set(first.bases)].join(", ");
  return `${where}: ${JSON.stringify(first.pattern)} matches ${first.rel} (${first.abs}), outside every directory it names (${bases}): the glob library read a ".." path segment there as a name, as a wildcard does beside a negation opening with ".." (such as !../old/**), which moves its walk above the working directory; such a file would be digested but neither watched nor judged for its reach; give each directory outside the working directory as a pattern of its own, opening with its .. (such as ../shared/**).`;
}
