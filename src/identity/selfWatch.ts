// Servers that restart themselves: a watcher that keeps the stdio pipe and swaps its child when
// a file changes (node --watch, tsx watch, nodemon…). For such a server a rebuild is followed by a
// replacement the supervisor sees, so the gateway must not report the running code as unchanged.
import { basename } from "node:path";

/** The watcher a command line runs under, as a short name (`node --watch`), or null. */
export function selfWatcher(argv: readonly string[]): string | null {
  const words = argv.map((a) => basename(a).replace(/\.(c|m)?js$|\.cmd$|\.exe$/i, ""));
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (/^(nodemon|ts-node-dev|tsnd|node-dev|node-supervisor|supervisor)$/.test(w)) return w;
    if (/^(tsx|vite-node)$/.test(w) && (argv[i + 1] === "watch" || argv.includes("--watch")))
      return `${w} watch`;
    if (
      /^(node|nodejs|bun|deno)$/.test(w) &&
      argv.slice(i + 1).some((a) => /^--watch(?:-path)?(?:=|$)/.test(a))
    )
      return `${w} --watch`;
  }
  return null;
}

/** The watcher any process of a running server runs under (the launch command first), or null. */
export function selfWatcherOf(r: {
  launchCommand: string[];
  processes?: { argv: string[] }[];
}): string | null {
  for (const argv of [r.launchCommand, ...(r.processes ?? []).map((p) => p.argv)]) {
    const w = Array.isArray(argv) ? selfWatcher(argv) : null;
    if (w) return w;
  }
  return null;
}
