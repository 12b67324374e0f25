import { safeText } from "../catalog/text.js";
import { jsonSyntaxProblem } from "../config/jsonSyntax.js";
import { drill } from "../onboard/drill.js";
import { findDrillServer } from "../onboard/drillServer.js";
import { throwawayStateDirRefusal } from "../store/stateDir.js";
import { counted } from "../util/counted.js";
import { parse, refuseEmpty } from "./args.js";
import { EXIT_CHECK_FAILED, UsageError } from "./errors.js";
import { PassphraseError, readPassphrase } from "./passphrase.js";

export const DRILL_HELP = `usage: portcullis drill LABEL [--file PATH] [--rebuild CMD] [--tool NAME --args JSON]

The rebuild test against your own server, in a throwaway state directory. LABEL is a server of
portcullis.json or a key of a host configuration: the first file found that defines it (the drill
says which, and which others do), or the file --file PATH names. Host variables such as
\${workspaceFolder} are expanded as the host would, from the working directory. Start revision
A, list, approve and call --tool once, rebuild (--rebuild CMD runs your real build in the
server's directory, or here for a Claude Desktop entry, which starts in / as Desktop may start it;
without it the drill restarts the server process, same code, which the
supervisor starts as a new execution epoch), expect the call made again not to run on the old
approval (refused as authorization_stale; a per-call tool, approved one call at a time, is held
for a new approval request instead, which the drill denies), re-list, approve, call again, show
the audit records of both epochs. Asks for a passphrase for the throwaway keyring. Calls no tool
you did not name. A failed step shows the gateway's last stderr lines. Exit 1 when a step fails.`;

export async function drillCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse("drill", args, {
    file: { type: "string" },
    rebuild: { type: "string" },
    tool: { type: "string" },
    args: { type: "string" },
    // read only to be refused by name: the drill's state is its own (throwawayStateDirRefusal)
    "state-dir": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    process.stdout.write(`${DRILL_HELP}\n`);
    return 0;
  }
  if (values["state-dir"] !== undefined)
    throw new UsageError(throwawayStateDirRefusal("drill", values["state-dir"]));
  if (positionals.length === 0) throw new UsageError("drill: give one server LABEL.");
  // two words were "give one server LABEL", as if none was given (neither is shown: one may be a
  // secret typed in the wrong place)
  if (positionals.length > 1)
    throw new UsageError(
      `drill: takes one server LABEL (${positionals.length} words were given, not shown); the file it is read from is given with --file PATH.`,
    );
  refuseEmpty("drill", "file", values.file, "the file LABEL is read from", "to look LABEL up from here");
  refuseEmpty(
    "drill",
    "rebuild",
    values.rebuild,
    "the build command",
    "to restart the server process instead",
  );
  refuseEmpty("drill", "tool", values.tool, "the name of a tool to call", "to call none");
  refuseEmpty(
    "drill",
    "args",
    values.args,
    "the tool's arguments as a JSON object",
    "to call the tool with none ({})",
  );
  const toolArgs = values.args === undefined ? undefined : drillArgs(values.args, values.tool);
  // the label is looked up before the passphrase is asked: a typo costs no typing
  const server = findDrillServer(positionals[0]!, process.cwd(), values.file);
  const passphrase = await drillPassphrase();
  const results = await drill({
    server,
    passphrase,
    rebuild: values.rebuild,
    tool: values.tool,
    args: toolArgs,
    // the lines carry the server's words (tool names, results, errors): every character a
    // terminal would act on or a reader cannot see is written as an escape
    say: (l) => process.stdout.write(`${safeText(l)}\n`),
  });
  const failed = results.filter((r) => r.status === "failed");
  const notRun = results.filter((r) => r.status === "not run");
  if (failed.length > 0) {
    process.stdout.write(
      `drill: could not prove step ${results.indexOf(failed[0]!) + 1} (${failed[0]!.step})${notRun.length ? `; ${counted(notRun.length, "later step")} not run` : ""}\n`,
    );
    return EXIT_CHECK_FAILED;
  }
  const skipped = results.flatMap((r, i) => (r.status === "skipped" ? [i + 1] : []));
  // without --tool the drill proved a new epoch, not the refusal it exists for: said on the line
  // a human reads last, since "every step run passed" alone reads as the whole drill passing
  process.stdout.write(
    skipped.length === 0
      ? "drill: every step run passed\n"
      : `drill: every step run passed; ${skipped.length === 1 ? "step" : "steps"} ${listed(skipped)} skipped, so the drill proved a new execution epoch but not that an approval given before it is refused: give --tool NAME (a tool that asks for approval) to prove that\n`,
  );
  return 0;
}

/**
 * --args as the object of the tool's arguments. Where it stops being JSON is said as for a
 * portcullis.json that does not parse (a line and a column, in words), never with its text: the
 * arguments may hold a token.
 */
function drillArgs(text: string, tool: string | undefined): Record<string, unknown> {
  if (!tool) throw new UsageError("drill: --args needs --tool.");
  const expected = `give the tool's arguments as a JSON object, such as --args '{"path": "README.md"}'`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`drill: --args is not JSON (${jsonSyntaxProblem(text, e)}); ${expected}.`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new UsageError(`drill: --args is JSON but not an object; ${expected}.`);
  return parsed as Record<string, unknown>;
}

/** Step numbers as a sentence lists them: "3", "3 and 5", "3, 5 and 6". */
function listed(steps: number[]): string {
  return steps.length === 1 ? String(steps[0]) : `${steps.slice(0, -1).join(", ")} and ${steps.at(-1)}`;
}

/** The passphrase, or a usage error (exit 2, one sentence) when it cannot be had: no terminal… */
async function drillPassphrase(): Promise<string> {
  try {
    return await readPassphrase("Passphrase for the drill's throwaway keyring: ");
  } catch (e) {
    if (e instanceof PassphraseError) throw new UsageError(`drill: ${e.message}; nothing was run.`);
    throw e;
  }
}
