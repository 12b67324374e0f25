// The glob library, loaded only when a server has identity include patterns (it costs startup
// time to every gateway otherwise). A capture with patterns loads it before it globs; the
// watcher, started after such a capture, finds it loaded. Loaded with `require` (tinyglobby
// ships CommonJS too), not `import()`: the gateway's file is compiled from a V8 code cache, and
// code compiled that way has no dynamic import (scripts/codeCache.cjs).
import { createRequire } from "node:module";
import type { globSync as GlobSync } from "tinyglobby";

let loaded: typeof GlobSync | null = null;

export async function loadGlob(): Promise<typeof GlobSync> {
  loaded ??= (createRequire(import.meta.url)("tinyglobby") as { globSync: typeof GlobSync }).globSync;
  return loaded;
}

/** The glob function if a capture loaded it, else null. */
export function loadedGlob(): typeof GlobSync | null {
  return loaded;
}
