// The glob library, loaded only when a server has identity include patterns (it costs startup
// time to every gateway otherwise). A capture with patterns loads it before it globs; the
// watcher, started after such a capture, finds it loaded.
import type { globSync as GlobSync } from "tinyglobby";

let loaded: typeof GlobSync | null = null;

export async function loadGlob(): Promise<typeof GlobSync> {
  loaded ??= (await import("tinyglobby")).globSync;
  return loaded;
}

/** The glob function if a capture loaded it, else null. */
export function loadedGlob(): typeof GlobSync | null {
  return loaded;
}
