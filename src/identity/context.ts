// What a resolution carries down into nested commands (Ctx) and what each command folds back up
// into the command that started it (Found).
import { isScript } from "./files.js";

export type RuntimeKind = "node" | "python" | "deno" | "bun";

/** What one command line resolved to. */
export interface Found {
  exe: string | null;
  entry: string | null;
  wrappers: string[];
  runtime: { kind: RuntimeKind; exe: string | null } | null;
  /** Variables node reads from `--env-file` files (later files win), for the environment digest. */
  env: Record<string, string>;
}

export interface Ctx {
  cwd: string;
  path: string;
  env: Record<string, string>;
  depth: number;
  /** Top level: an entry named on the command line must be readable. */
  strict: boolean;
  /** Directory of the script whose text is being read (relative names are also tried there). */
  scriptDir: string | null;
  seen: Set<string>;
  /**
   * Resolves a command that a runner, a wrapper or a shell script starts (the command
   * resolver itself, handed down so that runners.ts and shell.ts need not import
   * command.ts, which imports them).
   */
  resolve: ResolveArgv;
}

export type ResolveArgv = (argv: string[], ctx: Ctx, nameOverride?: string) => Found;

export const MAX_DEPTH = 6;

/** Stands in a word for what only running the shell would tell (an unset variable, `$(...)`). */
export const UNKNOWN = "\u0002";

export function empty(exe: string | null = null): Found {
  return { exe, entry: null, wrappers: [], runtime: null, env: {} };
}

/** Folds what a command started by `out` resolved to into `out`. */
export function merge(out: Found, inner: Found): void {
  if (isScript(inner.exe) && inner.exe !== inner.entry) out.wrappers.push(inner.exe);
  out.wrappers.push(...inner.wrappers);
  if (inner.entry !== null) out.entry = inner.entry;
  if (inner.runtime !== null) out.runtime = inner.runtime;
  Object.assign(out.env, inner.env);
}
