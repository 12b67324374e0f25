#!/usr/bin/env node
import { createRequire } from "node:module";
import { setFlagsFromString } from "node:v8";
import { ConfigError } from "../config/config.js";
import { StateDirError } from "../store/stateDir.js";
import { StoreError } from "../store/storeError.js";
import { fileProblem } from "../util/errno.js";
import { nearestName } from "../util/nearest.js";
import {
  flagName,
  NOT_SHOWN_FLAG,
  optionTooEarly,
  repeated,
  shownWord,
  unexpectedArguments,
  unknownSubcommand,
} from "./args.js";
import { EXIT_USAGE, missingSubcommand, UsageError } from "./errors.js";
import { GATEWAY_V8_FLAGS } from "./gatewayFlags.js";
import { PassphraseError } from "./passphrase.js";

const HELP = `portcullis — a local trust gateway for MCP servers you build and rebuild

usage: portcullis <command> [options]

  run [options] -- COMMAND [ARGS...]   launch and guard a server (MCP on stdin/stdout)
  run LABEL                            a server from portcullis.json
  run [options] --url URL              guard a server reached by Streamable HTTP
  status [--json] [--all]              running gateways, their epochs and status lines
  catalog show LABEL [--revision N] [--json]
                                       a catalog revision of a server (default: the latest)
  catalog diff LABEL [FROM TO] [--json]
                                       what changed between two catalog revisions
  catalog list LABEL [--json]          every revision recorded for a server
  approvals [--json] [--watch] [--verbose] [--all]
                                       pending approval requests, with what changed (--watch: live;
                                       --verbose: the full review, with the whole process chain;
                                       --all: every one, not only the newest 20)
  approve ID|--next [--for session|call] [--json] [--verbose]
                                       approve a request, or the oldest one (asks for the passphrase)
  deny ID|--next [--reason TEXT] [--json] [--verbose]
                                       deny a request, or the oldest one (asks for the passphrase)
  grants [--json]  revoke GRANT [--json]
                                       active grants; revoke one (next call)
  init                                 create the keyring (asks for a passphrase)
  passphrase [--json]                  change the keyring's passphrase (the keys stay the same)
  rotate-keys [--json]                 replace every key of the keyring (a leaked keyring and passphrase)
  passkey list|add|rm                  passkeys that approve in the console (rm needs no passphrase)
  vault set|list|rm                    secrets for credential scopes (values never printed)
  unlock [--for DURATION]  lock        let running gateways use credentials, or stop them
  egress [LABEL] [--json]              destinations servers contacted, per epoch
  audit verify|export|checkpoint|sessions|activity|show
                                       the encrypted, hash-chained audit log
  console [--port N] [--no-open] [--proof-window SECONDS]
          [--per-call-proof window|fresh] [--idle-timeout SECONDS]
                                       the local web console: review and decide requests
  demo [--keep] [--console]            the whole story, in a temporary state directory
  wrap [HOST|FILE] [--dry-run] [--json] [--servers a,b] [--label KEY=LABEL]
                                       put portcullis in front of a host's stdio servers
  unwrap [HOST|FILE]                   take it away again (the original bytes when unedited)
  doctor [--json]                      what is in use, what is wrong, what to do next
  drill LABEL [--file PATH] [--rebuild CMD] [--tool NAME --args JSON]
                                       the rebuild test against your own server, throwaway state

Commands that use state take --state-dir DIR (default: $PORTCULLIS_HOME, else
$XDG_STATE_HOME/portcullis, else ~/.local/state/portcullis). An option that takes one value,
--state-dir included, is refused when given twice.

Run 'portcullis <command> --help' (or 'portcullis help <command>') for a command's options;
'portcullis --version' (or -V) prints the version.
Exit codes: 0 success, 1 a check failed, 2 usage or environment error, 70 an internal error.`;

type Command = (args: string[]) => Promise<number>;

/**
 * The command a state directory's or a store's sentence is named by (reportFailure): the group's
 * subcommand with it once withStateDir has read it ("vault set"); else the command word itself.
 */
let failingCommand: string | undefined;

/** Names what fails from here on by the command and its group's subcommand, when one is given. */
function nameFailures(command: string, subcommand: string | null | undefined): string {
  failingCommand = subcommand ? `${command} ${subcommand}` : command;
  return failingCommand;
}

/**
 * Commands written against an explicit state directory take it from a leading or
 * trailing `--state-dir DIR` here, so every command accepts the flag the same way.
 */
function withStateDir(
  /** the command, named in a refusal of its --state-dir as every command's parser names it */
  name: string,
  run: (args: string[], ctx: StateDirContext) => Promise<number>,
  /** reads: it must exist; writes: made here; itself: the command makes it when it needs it (init) */
  only: "reads" | "writes" | "itself",
  /** the command given nothing else prints its help (audit, vault, passkey); not lock or init */
  bareIsHelp = false,
  /** a group's (audit, passkey, vault): the subcommand its words name, read as the group reads them */
  subcommandOf?: (args: string[]) => string | null,
): Command {
  return async (args) => {
    // A failure met here or before the subcommand runs (a --state-dir given twice, no state
    // directory, a store that cannot be used) names the subcommand, as the subcommand's own
    // failures do ("portcullis vault set: …", README "Commands"), not the group alone.
    const named = nameFailures(name, subcommandOf?.(args));
    const rest = [...args];
    // Given twice, it is refused as every command's parser refuses an option given twice (args.ts):
    // taking the first here left the second to the subcommand's parser ("unknown option").
    const end = rest.indexOf("--");
    const given = (end === -1 ? rest : rest.slice(0, end)).filter(
      (a) => a === "--state-dir" || a.startsWith("--state-dir="),
    );
    if (given.length > 1) throw new UsageError(`${named}: ${repeated("--state-dir")}.`);
    let flag: string | undefined;
    // only before a `--`: what follows it is operands, as the count above has it (POSIX)
    for (let i = 0; i < (end === -1 ? rest.length : end); i++) {
      const a = rest[i]!;
      if (a === "--state-dir") {
        flag = rest[i + 1];
        if (flag === undefined) throw new UsageError(`${named}: --state-dir needs a value.`);
        rest.splice(i, 2);
        break;
      }
      if (a.startsWith("--state-dir=")) {
        flag = a.slice("--state-dir=".length);
        rest.splice(i, 1);
        break;
      }
    }
    const { existingStateDir, hintStateDir, resolveStateDir, stateDirPath } = await import(
      "../store/stateDir.js"
    );
    // Help, and verifying an export file, need no state directory at all. A command that acts
    // when given nothing else (lock, unlock, init) does need it: a mistyped --state-dir must not
    // be reported as a vault already locked.
    const noState =
      (bareIsHelp && rest.length === 0) ||
      rest.some((a) => a === "--help" || a === "-h" || a === "--file" || a.startsWith("--file="));
    const resolve =
      noState || only === "itself"
        ? () => stateDirPath(flag)
        : only === "reads"
          ? () => existingStateDir(flag)
          : () => resolveStateDir(flag);
    return run(rest, lazyStateDir(resolve, hintStateDir(flag)));
  };
}

/** What a command run by withStateDir is given: its state directory, resolved when first read. */
interface StateDirContext {
  /** resolved (and refused when missing) on first read: after the command has read its flags */
  readonly stateDir: string;
  /** the directory a usage error's hint names, never refused (hintStateDir) */
  readonly hint: string | undefined;
}

/**
 * The state directory resolved on first read, not before the command runs: resolved first, a
 * missing one was reported for `vault set X --hots h` instead of the mistyped option, where every
 * command that reads its own --state-dir (status, approvals, catalog) reports the option first.
 */
function lazyStateDir(resolve: () => string, hint: string | undefined): StateDirContext {
  let dir: string | undefined;
  return {
    get stateDir() {
      dir ??= resolve();
      return dir;
    },
    hint,
  };
}

/**
 * A gateway lives as long as its host's session and is mostly idle: keep V8's young generation
 * at its initial size instead of letting a burst of calls grow it (to 16 MB per semi-space) and
 * keep it. Measured (docs/performance-history.md, "Startup order and idle memory
 * (second pass)"): idle RSS about 9 MB lower, 12 MB lower after 1,000
 * calls, no measurable cost to throughput. Read by V8 when it would grow the space, so setting it
 * here, before the gateway allocates, takes effect (unlike --max-semi-space-size).
 */
function leanYoungGeneration(): void {
  setFlagsFromString(GATEWAY_V8_FLAGS);
}

const commands: Record<string, () => Promise<Command>> = {
  run: async () => {
    leanYoungGeneration();
    // a gateway holds the values the vault releases: its crash reports are scrubbed of them
    (await import("./lastResort.js")).installLastResort();
    return (await import("./run.js")).runCommand;
  },
  status: async () => (await import("./status.js")).statusCommand,
  catalog: async () => {
    const { catalogCommand, catalogSubcommand } = await import("./catalog.js");
    return (args) => {
      nameFailures("catalog", catalogSubcommand(args));
      return catalogCommand(args);
    };
  },
  // init makes the state directory once it has a passphrase, and takes it back if it fails
  init: async () => withStateDir("init", (await import("./init.js")).initCommand, "itself"),
  passphrase: async () =>
    withStateDir("passphrase", (await import("./passphraseChange.js")).passphraseCommand, "reads"),
  "rotate-keys": async () =>
    withStateDir("rotate-keys", (await import("./rotateKeys.js")).rotateKeysCommand, "reads"),
  audit: async () => {
    const { auditCommand, auditSubcommand } = await import("./audit.js");
    return withStateDir("audit", auditCommand, "reads", true, auditSubcommand);
  },
  passkey: async () => {
    const { passkeyCommand, passkeySubcommand } = await import("./passkey.js");
    return withStateDir("passkey", passkeyCommand, "reads", true, passkeySubcommand);
  },
  demo: async () => (await import("./demo.js")).demoCommand,
  wrap: async () => {
    const { wrapCommand } = await import("./wrap.js");
    return (args) => wrapCommand("wrap", args);
  },
  unwrap: async () => {
    const { wrapCommand } = await import("./wrap.js");
    return (args) => wrapCommand("unwrap", args);
  },
  doctor: async () => (await import("./doctor.js")).doctorCommand,
  console: async () => (await import("./console.js")).consoleCommand,
  drill: async () => (await import("./drill.js")).drillCommand,
  vault: async () => {
    const { vaultCommand, vaultSubcommand } = await import("./vault.js");
    return withStateDir("vault", vaultCommand, "reads", true, vaultSubcommand);
  },
  unlock: async () => withStateDir("unlock", (await import("./unlock.js")).unlockCommand, "reads"),
  lock: async () => withStateDir("lock", (await import("./lock.js")).lockCommand, "reads"),
  egress: async () => (await import("./egress.js")).egressCommand,
  "__vault-holder": async () =>
    withStateDir("__vault-holder", (await import("./vaultHolder.js")).holderProcess, "reads"),
};
for (const name of ["approvals", "approve", "deny", "grants", "revoke"] as const) {
  commands[name] = async () => {
    const { approvalsCommand } = await import("./approvals.js");
    return (args) => approvalsCommand(name, args);
  };
}

/**
 * The command groups' subcommands, which name a failure with the group (README, "Commands"), and
 * `help GROUP SUBCOMMAND` is that subcommand's help. Declared above the module's own call of main
 * (below), whose first steps run before any declaration after that call.
 */
const GROUPS: Record<string, readonly string[]> = {
  audit: ["verify", "export", "checkpoint", "sessions", "activity", "show"],
  catalog: ["show", "diff", "list"],
  passkey: ["list", "add", "rm"],
  vault: ["set", "list", "rm"],
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  // `portcullis help run` is `portcullis run --help`, as git and npm read it; so is
  // `portcullis --help run` (git's reading too): the word after it was passed over, and the
  // whole list printed with exit 0
  if ((name === "help" || name === "--help" || name === "-h") && rest.length > 0) {
    const [topic, ...more] = rest;
    // `portcullis help vault set` is `portcullis vault set --help`, for the command groups, whose
    // own parsing refuses a word that is none of their subcommands; it was refused as two commands
    const group = Object.hasOwn(GROUPS, topic!);
    // `portcullis help status --json` is `portcullis status --json --help`, as README has it (the
    // command's own options after it, its subcommand's for a group): it was refused as "give one
    // command", though one was given; the command's parsing judges the options
    const words = group && more.length > 0 && !more[0]!.startsWith("-") ? more.slice(1) : more;
    const command = Object.hasOwn(commands, topic!) && !topic!.startsWith("__");
    // an option, never '--' (or '-'): after '--' the `--help` put last is an operand, and `help run
    // --` ran `run -- --help`, a gateway around a command named --help
    if (command && words.length > 0 && words.every((w) => /^--?[^-]/.test(w)))
      return main([topic!, ...more, "--help"]);
    if (more.length === 1 && group && !more[0]!.startsWith("-")) {
      const sub = more[0]!;
      if (!GROUPS[topic!]!.includes(sub))
        throw new UsageError(`${unknownSubcommand(topic!, sub, GROUPS[topic!]!)}.`);
      return main([topic!, sub, "--help"]);
    }
    // named as typed: `portcullis --help a b` is refused as `--help`, not as a `help` not typed
    if (more.length > 0)
      throw new UsageError(
        `${name}: give one command (portcullis ${name} COMMAND${group ? " [SUBCOMMAND]" : ""}).`,
      );
    // the help of help (`help --help`, `help -h`, `help help`) is the command list
    if (topic === "--help" || topic === "-h" || topic === "help") return main(["--help"]);
    // an option where the command goes (`portcullis --help --json`) is named as the option it
    // is, not refused as a command word that "does not read as" one
    if (topic!.startsWith("-")) throw new UsageError(`${name}: ${optionForHelp(topic!)}.`);
    if (!Object.hasOwn(commands, topic!) || topic!.startsWith("__"))
      throw new UsageError(`${name}: ${unknownCommand(topic!)}.`);
    return main([topic!, "--help"]);
  }
  // an empty word (an unset `$COMMAND`) is no command given: refused below as unknown, as an
  // empty option value is refused (args.ts, refuseEmpty), not answered with the help
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(`${HELP}\n`);
    if (!name) missingSubcommand("", []);
    return name ? 0 : EXIT_USAGE;
  }
  if (name === "--version" || name === "-V") {
    // a word after it is refused, as every command refuses a word too many (not shown: it may be
    // a secret typed in the wrong place), not passed over with the version printed and exit 0
    // Written here: named as a command's refusal is ("portcullis status: unexpected argument …").
    if (rest.length > 0) {
      process.stderr.write(`portcullis ${name}: ${versionRefusal(name, rest)}.\n`);
      return EXIT_USAGE;
    }
    const pkg = createRequire(import.meta.url)("../../package.json") as { version: string };
    process.stdout.write(`portcullis ${pkg.version}\n`);
    return 0;
  }
  // an option before the command (`portcullis --state-dir DIR status`): said so, by its name only
  if (name.startsWith("-")) {
    const flag = flagName(name);
    // a mistyped --version or --help (`-v`, `--versoin`) is not an option meant for a command
    const meant = flag === NOT_SHOWN_FLAG ? null : ownOptionMeant(flag);
    if (meant)
      throw new UsageError(
        `unknown option ${flag} (did you mean ${meant}?); run 'portcullis --help' for the commands.`,
      );
    throw new UsageError(`${optionTooEarly(name)}.`);
  }
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!load) throw new UsageError(`${unknownCommand(name)}.`);
  return (await load())(rest);
}

/**
 * The refusal of a word that is no command (`portcullis statsu`, `portcullis help statsu`),
 * without its final period: with the command it most likely meant, said only when the word itself
 * is shown (`help statsu` said no "did you mean", where `statsu` did).
 */
function unknownCommand(word: string): string {
  const shown = shownWord(word);
  const near = shown.startsWith('"')
    ? nearestName(
        word,
        Object.keys(commands).filter((c) => !c.startsWith("__")),
      )
    : null;
  return `unknown command ${shown}${near ? ` (did you mean ${near}?)` : ""}; run 'portcullis --help' for the list`;
}

/**
 * The refusal, without its final period, of a dashed word given to `--help` or `help` where the
 * command goes: the option by its name (only when it reads as one: flagName), said to be none of
 * portcullis's own (--help, --version), and where a command's options go.
 */
function optionForHelp(word: string): string {
  const flag = flagName(word);
  if (flag === NOT_SHOWN_FLAG)
    return `a word that starts with '-' came where the command goes (not shown: it does not read as an option, and may be a secret typed in the wrong place); give a command (portcullis help COMMAND)`;
  if (flag === "--version" || flag === "-V") return `${flag} is given alone (portcullis ${flag})`;
  const meant = ownOptionMeant(flag);
  if (meant) return `unknown option ${flag} (did you mean ${meant}?)`;
  return `${flag} is not one of portcullis's own options (--help, --version); a command's options go after the command (portcullis COMMAND ${flag} …), and 'portcullis help COMMAND' says which it takes`;
}

/**
 * The refusal, without its final period, of words given after `--version` (or `-V`): one option
 * is named as `--help --json` names it (README: portcullis's own options are given alone; it was
 * "unexpected argument", as if it might be a secret); anything else is not shown.
 */
function versionRefusal(name: string, rest: string[]): string {
  const flag = rest.length === 1 && rest[0]!.startsWith("-") ? flagName(rest[0]!) : NOT_SHOWN_FLAG;
  if (flag === NOT_SHOWN_FLAG || !flag.startsWith("-")) return unexpectedArguments(rest.length);
  if (["--help", "-h", "--version", "-V"].includes(flag))
    return `${name} is given alone (portcullis ${name})`;
  return optionForHelp(flag);
}

/**
 * The option of portcullis itself (not of a command) a flag given before the command most likely
 * meant: `--version` for `-v` (many tools' spelling; portcullis's is `-V`) or a typo of it, `--help`
 * for a typo of that; null for any other flag, which belongs after a command.
 */
function ownOptionMeant(flag: string): string | null {
  if (flag === "-v") return "--version";
  if (!flag.startsWith("--")) return null;
  const near = nearestName(flag.slice(2), ["version", "help"]);
  return near ? `--${near}` : null;
}

/** The keyring's errors, loaded only when a command failed (the module pulls in the crypto code). */
async function isKeyringError(e: unknown): Promise<boolean> {
  if (!(e instanceof Error)) return false;
  const { KeyringError } = await import("../keyring/keyringErrors.js");
  return e instanceof KeyringError;
}

/** The store's sentence, then the one thing to do about it (what `doctor` advises for its cause). */
async function withAdvice(e: StoreError): Promise<string> {
  // a store of another user: its sentence says already what to do
  if (e.reason === "permissions" && e.problem.includes("run the command as")) return e.message;
  const { storeAdvice } = await import("../store/storeAdvice.js");
  return `${e.message} To fix it: ${storeAdvice(e)}.`;
}

/**
 * An SQLite error as the StoreError sentence naming the store, or null. The store module (and
 * SQLite with it) is loaded only for an error that came from SQLite.
 */
async function storeFailure(e: unknown): Promise<StoreError | null> {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return null;
  return (await import("../store/db.js")).storeFailure(e);
}

/**
 * Processes whose stdout is not a result for a reader: a gateway's is its MCP client's (its
 * transport watches it), the vault holder's is its unlock's pipe (it watches that itself).
 */
const OWN_OUTPUT = new Set(["run", "__vault-holder"]);
const argv = process.argv.slice(2);
const resultOutput = !OWN_OUTPUT.has(argv[0] ?? "");
if (resultOutput) exitWhenOutputCloses();

main(argv).then(
  async (code) => {
    // Exiting explicitly ends a gateway whose server left handles behind. process.exit also
    // skips better-sqlite3's teardown, which closes every database still open: a gateway whose
    // store's -wal was deleted under it leaves its store open on purpose, and closing it then
    // would copy the orphaned log over the live database (src/store/storeWatch.ts).
    if (resultOutput) await outputWritten();
    else if (argv[0] === "run") await clientOutputWritten();
    process.exit(code);
  },
  async (e: unknown) => {
    process.exitCode = await reportFailure(e, argv[0]);
    // Exit now, as on success: a command that failed may have left handles open (a gateway
    // whose server could not be launched was already reading its client's input), and a host
    // waiting on it must see it end, not wait for its own timeout.
    if (resultOutput) await outputWritten();
    else if (argv[0] === "run") await clientOutputWritten();
    process.exit();
  },
);

/**
 * Resolves once everything the command wrote to stdout and stderr has reached the pipe or file.
 * Node writes to a pipe asynchronously: what the pipe (64 KiB on Linux) does not take at once
 * waits in this process, and process.exit dropped it. `catalog show LABEL --json | jq` got the
 * first 65,536 bytes of a larger catalog, cut mid-string, with exit 0. An empty write's callback
 * runs once the writes before it are done.
 */
async function outputWritten(): Promise<void> {
  await Promise.all(
    [process.stdout, process.stderr].map(
      (stream) =>
        new Promise<void>((resolve) => {
          if (stream.writableLength === 0 || stream.destroyed) resolve();
          else stream.write("", () => resolve());
        }),
    ),
  );
  // A write to a file or device fails at once (`> /dev/full`: ENOSPC), but its 'error' event
  // comes on a later tick: a command that had finished exited 0 before it, over an output that
  // was never written (status, grants, approvals, doctor --json, --help). The stream keeps the
  // error it failed with: asked here, it is said whichever comes first.
  const failed = process.stdout.errored as NodeJS.ErrnoException | null;
  if (failed) outputFailed(failed);
  if (process.stderr.errored) process.exit(EXIT_USAGE);
}

/**
 * A gateway's last answers to its client, written before it exits: what its stdout pipe does not
 * take at once waits in this process, and process.exit dropped it. A client that closed its
 * input with 3,000 calls at a server that answers none got the shutdown's refusal for 1,100 to
 * 1,600 of them, nothing for the rest. Bounded (CLIENT_OUTPUT_WAIT_MS): a client that reads none
 * of its output would otherwise keep the gateway from ever exiting; one that went away fails the
 * write, which ends the wait as well.
 */
async function clientOutputWritten(): Promise<void> {
  const out = process.stdout;
  if (out.writableLength === 0 || out.destroyed) return;
  await new Promise<void>((resolve) => {
    // not unref'd: were the write's handle the last thing alive, an unref'd timer would let node
    // leave on its own, with exit code 0 instead of the gateway's own
    const late = setTimeout(resolve, CLIENT_OUTPUT_WAIT_MS);
    out.write("", () => {
      clearTimeout(late);
      resolve();
    });
  });
}

/** How long an exiting gateway waits for its client to read its last answers (clientOutputWritten). */
const CLIENT_OUTPUT_WAIT_MS = 10_000;

/**
 * A reader that went away before the output was all written (`| head`, a backup's ssh that
 * dropped) is an error of the environment, said in one sentence with exit 2: not an internal
 * error with a stack, and not exit 0 over a result cut short.
 */
function exitWhenOutputCloses(): void {
  process.stdout.on("error", outputFailed);
  process.stderr.on("error", () => process.exit(EXIT_USAGE));
}

/**
 * The command whose output could not be written, as every failure opens with it ("portcullis
 * status: …", "portcullis audit export: …", "portcullis --version: …"): a pipeline of several
 * portcullis commands cut short by `| head` says which one. A word that is no command is not
 * repeated (it may be a secret typed in the wrong place).
 */
function outputCommand(): string {
  const [first, second] = argv;
  if (first === undefined) return "portcullis";
  if (["--help", "-h", "help", "--version", "-V"].includes(first)) return `portcullis ${first}`;
  if (!Object.hasOwn(commands, first) || first.startsWith("__")) return "portcullis";
  // the subcommand when it is the next word; written after an option, the group alone
  return Object.hasOwn(GROUPS, first) && GROUPS[first]?.includes(second ?? "")
    ? `portcullis ${first} ${second}`
    : `portcullis ${first}`;
}

/** Standard output could not take what the command wrote: one sentence, exit 2. */
function outputFailed(e: NodeJS.ErrnoException): never {
  try {
    // a reader that left is EPIPE; a file that cannot take it (`> /dev/full`: ENOSPC, a
    // descriptor opened to read: EBADF) was called a reader that left too
    const why =
      e.code === "EPIPE" || e.code === undefined
        ? "was closed by its reader before everything was written"
        : `cannot be written: ${fileProblem(e.code)}`;
    process.stderr.write(`${outputCommand()}: standard output ${why}; what it received is incomplete.\n`);
  } finally {
    process.exit(EXIT_USAGE);
  }
}

/** Writes what went wrong as the user needs it and returns the exit code. */
async function reportFailure(e: unknown, command: string | undefined): Promise<number> {
  // The sentences quote what they refuse: a key of portcullis.json, a server key of a host file
  // (a project's files come with a cloned repository), a path. A character a terminal would act
  // on (ESC starting a sequence, a bidi override) is written as an escape, not sent to it.
  // Each is scrubbed of the values the vault released, should a gateway's sentence quote one.
  const { safeText } = await import("../catalog/text.js");
  const { reportInternalError, scrubReleased } = await import("./lastResort.js");
  const { failureLine } = await import("./failureLine.js");
  // A state directory's or a store's sentence ("no state directory at …", "the store … cannot be
  // written"), or a configuration file's ("FILE: not valid JSON …"), names no command: it is
  // shared by every command that reads state or the file. It is named by the command that
  // failed ("portcullis status: …", "portcullis vault set: …", with a group's subcommand as its
  // own failures are), as every other failure is, when that is one of the command line's (not an
  // internal one's, nor a mistyped word's) and the sentence names none itself.
  const stateSentence = (sentence: string) =>
    command === undefined ||
    command.startsWith("__") ||
    !Object.hasOwn(commands, command) ||
    !failureLine(sentence).startsWith("portcullis: ")
      ? sentence
      : `${failingCommand ?? command}: ${sentence}`;
  const write = (sentence: string) =>
    // scrubbed again once escaped: an escape (`\u001b`) may spell a value holding such text anew
    process.stderr.write(`${scrubReleased(safeText(scrubReleased(failureLine(sentence))))}\n`);
  {
    // The input or the environment is wrong (a damaged store or keyring included, no terminal
    // to ask a passphrase on): one sentence, exit 2.
    if (e instanceof StoreError) {
      write(stateSentence(await withAdvice(e)));
      return EXIT_USAGE;
    }
    if (e instanceof StateDirError) {
      write(stateSentence(e.message));
      return EXIT_USAGE;
    }
    // A configuration's sentence ("FILE: …", shared by run, drill, console, …) is named by the
    // command that read the file too: "portcullis run: FILE: …", as a state directory's is.
    if (e instanceof ConfigError) {
      write(stateSentence(e.message));
      return EXIT_USAGE;
    }
    if (e instanceof UsageError || e instanceof PassphraseError) {
      write(e.message);
      return EXIT_USAGE;
    }
    // its messages are written to end a sentence the caller finishes
    if (await isKeyringError(e)) {
      write(`${(e as Error).message}${(await import("./keyringAdvice.js")).keyringEnding(e)}`);
      return EXIT_USAGE;
    }
    // The store failed after it was opened (locked by another process past the busy timeout,
    // disk full, made read-only): the same sentence as a failure to open it, exit 2.
    const store = await storeFailure(e);
    if (store) {
      write(stateSentence(await withAdvice(store)));
      return EXIT_USAGE;
    }
    // scrubbed of released values and redacted (src/cli/lastResort.ts): its message may quote them
    reportInternalError(e);
    return 70;
  }
}
