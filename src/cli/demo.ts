import { throwawayStateDirRefusal } from "../store/stateDir.js";
import { parse } from "./args.js";
import { UsageError } from "./errors.js";

export const DEMO_HELP = `usage: portcullis demo [--keep] [--console]

The rebuild drill, self-contained: a fixture inventory server behind a real gateway process,
in a temporary state directory. Revision A is approved and called; the server is rebuilt to
revision B; the call the agent prepared before the rebuild is refused as stale; the agent
re-lists, a human approves again (seeing what changed), and the call goes through. Then a
credential the server never holds: a secret stored in the vault is released by the egress proxy
to the one declared host for approved code only; the server itself sees a placeholder, and after
a rebuild nobody approved the API receives the placeholder again.
Human decisions are made through the same code path as 'portcullis approve'.

  --keep      keep the temporary directory (state, audit log, fixture record) and print its path;
              every command the demo prints names its state directory (--state-dir DIR)
  --console   run the story with the web console open (its URL is printed): the human's
              decisions go through it, as a logged-in browser's would`;

/** The demo's arguments without a `--state-dir DIR` (or `--state-dir=DIR`), and DIR ("" when none follows). */
function withoutStateDir(args: string[]): { rest: string[]; stateDirGiven: string | undefined } {
  const at = args.findIndex((a) => a === "--state-dir" || a.startsWith("--state-dir="));
  if (at === -1) return { rest: args, stateDirGiven: undefined };
  const spaced = args[at] === "--state-dir";
  return {
    rest: args.filter((_, i) => i !== at && !(spaced && i === at + 1)),
    stateDirGiven: spaced ? (args[at + 1] ?? "") : args[at]!.slice("--state-dir=".length),
  };
}

/**
 * `portcullis demo`: its options read and refused here, before the story's module (the MCP SDK,
 * the console, the store) is loaded, so that `--help` or a mistyped option answers at once.
 */
export async function demoCommand(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(`${DEMO_HELP}\n`);
    return 0;
  }
  // --state-dir (and its value) is refused by its name once the rest is read, as drill does
  const { rest, stateDirGiven } = withoutStateDir(args);
  // the shared parser, so its refusals are every command's: an unknown option named with where
  // the options are listed (or a near one), a stray word counted and not shown (src/cli/args.ts)
  parse("demo", rest, { keep: { type: "boolean" }, console: { type: "boolean" } }, false);
  // the demo's state is its own (throwawayStateDirRefusal)
  if (stateDirGiven !== undefined) throw new UsageError(throwawayStateDirRefusal("demo", stateDirGiven));
  const { runDemo } = await import("../demo/demo.js");
  return runDemo({ keep: args.includes("--keep"), withConsole: args.includes("--console") });
}
