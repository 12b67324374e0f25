// Where things are: the repository, the built CLI, the fixture servers, and the npm reference
// servers with the arguments each one needs to speak MCP on stdio.
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundledFixture } from "./fixtureBundle.js";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The built gateway entry: `node CLI run ...` (exists after `npm run build`). */
export const CLI = join(REPO, "dist", "cli", "main.cjs");

/** The node running the tests: use it (not "node" from PATH) to start everything. */
export const NODE = process.execPath;

const servers = join(REPO, "test", "fixtures", "servers");
/** A Node fixture as one self-contained file (fixtureBundle.ts says why), else its source. */
const node = (name: string): string => bundledFixture(REPO, name) ?? join(servers, `${name}.mjs`);

/** Fixture servers (plain .mjs, run with `node FILE`). Each file's header documents its env. */
export const FIXTURES = {
  /** inventory server with revisions A/B/C; usually started via makeProject() (project.ts) */
  revisioned: node("revisioned"),
  /** tools from the JSON file FIXTURE_CATALOG, paged, list_changed on change, answers any name */
  catalog: node("catalog"),
  /** catalog.mjs on the v2 SDK: 2026-07-28 era (and legacy unless FIXTURE_LEGACY=reject) */
  modern: node("modern"),
  /** answers properly, and writes malformed/huge/non-JSON-RPC/unknown-id/batch lines on command */
  badpeer: node("badpeer"),
  /** exits with code 1 at once, or after FIXTURE_CRASH_AFTER_MS */
  crashy: node("crashy"),
  /** hand-rolled echo {message} server for benchmarks */
  echo: node("echo"),
  /** floods list_changed, big results, big requests, slow answers (clients' habits); FIXTURE_LIST_LOG */
  habits: node("habits"),
  /** a catalog that changes on every list with list_changed without end, or pages without end (FIXTURE_MODE) */
  unruly: node("unruly"),
  /** logs every method it receives to FIXTURE_METHOD_LOG and answers any method, name folded */
  lenient: node("lenient"),
  /** logs every line it receives verbatim (FIXTURE_RAW_LOG); writes lines it is given (raw/reply, raw/send) */
  rawlines: node("rawlines"),
  /** speaks, as a process's successor, under the ids the process before it owed (FIXTURE_OWED) */
  impostor: node("impostor"),
  /** keeps the stdio pipe and replaces its child when a file changes (nodemon-like) */
  watcher: node("watcher"),
  /** starts and ends processes of its own: a helper at initialize, a leftover, a stderr flood */
  children: node("children"),
  /** `hand_off` gives the gateway's pipes to a child of other code (FIXTURE_HANDOFF_EXIT=1: and exits) */
  handoff: node("handoff"),
  /** python: on `become`, answers, then execve()s into the same interpreter (run with python3) */
  execs: join(servers, "execs.py"),
  /** loads <cwd>/plugins/once.mjs lazily on its first `plugin` call and keeps it; `wait` until FIXTURE_RELEASE */
  plugins: node("plugins"),
  /** the official conformance suite's reference server (every feature the suite exercises) */
  conformance: node("conformance"),
  /** on the v1 SDK: `ask {method}` sends the client that request whatever it declared, answers with the outcome */
  sdkAsker: node("sdk-asker"),
} as const;

const npmServer = (name: string) =>
  join(REPO, "node_modules", "@modelcontextprotocol", name, "dist", "index.js");

/** @modelcontextprotocol/server-everything: needs the "stdio" argument (it is the default, but be explicit). */
export const EVERYTHING = {
  entry: npmServer("server-everything"),
  args: (): string[] => [npmServer("server-everything"), "stdio"],
};

/** @modelcontextprotocol/server-filesystem: the allowed directories are its arguments. */
export const FILESYSTEM = {
  entry: npmServer("server-filesystem"),
  args: (...allowedDirs: string[]): string[] => [npmServer("server-filesystem"), ...allowedDirs],
};

/** @modelcontextprotocol/server-memory: set MEMORY_FILE_PATH, or it writes next to its own dist/. */
export const MEMORY = {
  entry: npmServer("server-memory"),
  args: (): string[] => [npmServer("server-memory")],
  env: (memoryFile: string): Record<string, string> => ({ MEMORY_FILE_PATH: memoryFile }),
};

/** A fixture's command line: [NODE, file, ...args]. */
export function fixtureCommand(name: keyof typeof FIXTURES, ...args: string[]): [string, ...string[]] {
  return [NODE, FIXTURES[name], ...args];
}
