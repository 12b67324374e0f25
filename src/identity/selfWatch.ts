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

/**
 * Whether a server runs under node's own watch mode (`node --watch`, found as selfWatcherOf finds
 * it), whose notices share the server's stdout (isNodeWatchNotice).
 */
export function underNodeWatch(r: Parameters<typeof selfWatcherOf>[0]): boolean {
  const w = selfWatcherOf(r);
  return w === "node --watch" || w === "nodejs --watch";
}

// ANSI colours (and the `\x1bc` that clears the screen) node adds when colours are forced on a pipe
// biome-ignore lint/suspicious/noControlCharactersInRegex: the escapes are what it strips
const ANSI = /\x1b(?:c|\[[0-9;]*m)/g;
// node 20+ (lib/internal/main/watch_mode.js): the command is quoted by util.inspect, so in '…'
// unless it holds a single quote, then in "…" or `…`
const NODE_WATCH_NOTICE =
  /^(?:(?:Restarting|Completed running|Failed running|Gracefully restarted) (?:'.*'|".*"|`.*`)|Waiting for graceful termination\.\.\.)$/;

/**
 * Whether a line is one of the notices node's watch mode writes to the stdout it shares with its
 * worker: "Restarting 'x'" as it swaps the worker, "Completed running 'x'" / "Failed running
 * 'x'" when the worker exits by itself, and the graceful-termination pair. Only the wording of a
 * log line depends on it: a server can print the same words.
 */
export function isNodeWatchNotice(line: string): boolean {
  return NODE_WATCH_NOTICE.test(line.replace(ANSI, "").trimEnd());
}
