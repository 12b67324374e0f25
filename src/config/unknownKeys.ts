import { nearestName } from "../util/nearest.js";
import { pathText } from "../util/valuePath.js";

/**
 * How every section of a configuration file says a key it does not take, so a typo reads the same
 * wherever it is (`console.proofWindw`, `servers.a.onchange`, `credentials.K.secrte`): with the
 * key it most likely meant, or else the keys the place takes.
 */
export function unknownKeyProblem(key: string, known: readonly string[]): string {
  const near = nearestName(key, known);
  return near
    ? `is not a known key (did you mean ${near}?)`
    : `is not a known key (the keys here: ${known.join(", ")})`;
}

/**
 * `at` (a key path, "" for the top level) followed by `key` as a path shows it: dotted when an
 * identifier, else quoted in brackets with its control characters escaped (the file may be a
 * cloned project's, and a key in it a terminal escape).
 */
export function keyPath(at: string, key: string): string {
  const shown = pathText([key], "member");
  if (at === "") return shown;
  return shown.startsWith("[") ? `${at}${shown}` : `${at}.${shown}`;
}

/** Refuses the first key of `obj` not in `known`, naming its path under `at` (`fail(path, what)`). */
export function refuseUnknownKeys(
  obj: object,
  known: readonly string[],
  at: string,
  fail: (path: string, what: string) => never,
): void {
  for (const k of Object.keys(obj)) if (!known.includes(k)) fail(keyPath(at, k), unknownKeyProblem(k, known));
}
