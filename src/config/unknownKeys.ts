import { safeText } from "../catalog/text.js";
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

/** A plain name (letters, digits, `_`, `$`, `-`), dotted on as every path of a config file is written. */
const PLAIN_KEY = /^[\w$-]{1,64}$/;

/**
 * `at` (a key path, "" for the top level) followed by `key` as a path shows it: dotted when a
 * plain name (`servers.inventory-local.audit`), else quoted in brackets, cut when long, with every
 * character a human cannot see for what it is escaped: controls, U+2028, bidi overrides (the
 * file may be a cloned project's, and a key in it a terminal escape or a reordering of the line).
 * Every key a configuration error shows from the file goes through here (a name inside a
 * sentence, through quotedName).
 */
export function keyPath(at: string, key: string): string {
  if (PLAIN_KEY.test(key)) return at === "" ? key : `${at}.${key}`;
  return `${at}${safeText(pathText([key], "member"))}`;
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
