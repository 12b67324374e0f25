import {
  APPROVAL_MODES,
  AUDIT_ARGUMENTS,
  LABEL_PATTERN,
  LABEL_RULE,
  messageBytesProblem,
  ON_CHANGE,
  ON_EXPAND,
} from "../config/config.js";
import { labelArgument, oneOf, parse, refuseEmpty, unexpectedArguments, wholeNumber } from "./args.js";
import { UsageError } from "./errors.js";

/**
 * `portcullis run`'s options, apart from run itself: doctor reads a host entry's run arguments
 * with them (which options take a value, so that a label is told from an option's value)
 * without loading the gateway's modules.
 */
export const RUN_OPTIONS = {
  label: { type: "string" },
  "on-change": { type: "string" },
  "on-expand": { type: "string" },
  approval: { type: "string" },
  watch: { type: "string", multiple: true },
  url: { type: "string" },
  header: { type: "string", multiple: true },
  "header-secret": { type: "string", multiple: true },
  "allow-insecure": { type: "boolean" },
  "state-dir": { type: "string" },
  config: { type: "string" },
  "hold-timeout": { type: "string" },
  "max-message-bytes": { type: "string" },
  "approval-timeout": { type: "string" },
  "request-ttl": { type: "string" },
  "audit-sync": { type: "string" },
  "audit-arguments": { type: "string" },
  listen: { type: "string" },
  "listen-token-file": { type: "string" },
  "no-auth": { type: "boolean" },
  "listen-max-sessions": { type: "string" },
  "listen-idle-timeout": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

export type RunValues = ReturnType<typeof parse<typeof RUN_OPTIONS>>["values"];

/** run's command line, read: its options, and what the server is. */
export interface RunArgs {
  values: RunValues;
  /** a LABEL of portcullis.json, the command after '--', or a URL (--url) */
  server:
    | { kind: "label"; label: string }
    | { kind: "command"; command: string[] }
    | { kind: "url"; url: string };
  onChange: (typeof ON_CHANGE)[number] | undefined;
  onExpand: (typeof ON_EXPAND)[number] | undefined;
  approval: (typeof APPROVAL_MODES)[number] | undefined;
  holdTimeoutMs: number | undefined;
  approvalTimeoutMs: number | undefined;
  requestTtlMs: number | undefined;
  maxMessageBytes: number | undefined;
  auditSync: "full" | "normal";
  auditArguments: (typeof AUDIT_ARGUMENTS)[number] | undefined;
}

/**
 * Everything `run` refuses from its command line alone, before it reads a file or loads a
 * module: an unknown option, a value an option does not take, a LABEL and '-- COMMAND' together.
 * A UsageError (exit 2) with run's own sentence. Here, not in run.ts, so that doctor reads a host
 * entry's `run` arguments with the very checks the gateway the host starts makes, without
 * loading the gateway (src/onboard/doctorLabels.ts). "help" when `--help` is given: run prints
 * its help and exits, whatever else is there.
 */
export function readRunArgs(args: string[]): RunArgs | "help" {
  const sep = args.indexOf("--");
  const { values, positionals } = parse("run", sep === -1 ? args : args.slice(0, sep), RUN_OPTIONS);
  if (values.help) return "help";
  const onChange = oneOf("run", "on-change", values["on-change"], ON_CHANGE);
  const onExpand = oneOf("run", "on-expand", values["on-expand"], ON_EXPAND);
  const approval = oneOf("run", "approval", values.approval, APPROVAL_MODES);
  const holdTimeoutMs = milliseconds("hold-timeout", values["hold-timeout"]);
  const approvalTimeoutMs = milliseconds("approval-timeout", values["approval-timeout"]);
  const requestTtlMs = milliseconds("request-ttl", values["request-ttl"]);
  const maxMessageBytes = messageBytes(values["max-message-bytes"]);
  const auditSync = oneOf("run", "audit-sync", values["audit-sync"], ["full", "normal"] as const) ?? "full";
  const auditArguments = oneOf("run", "audit-arguments", values["audit-arguments"], AUDIT_ARGUMENTS);

  if (values.label !== undefined && !LABEL_PATTERN.test(values.label)) {
    // The same rule as a portcullis.json label: the label reaches status, the audit log and reviews.
    throw new UsageError(`run: --label must be a plain label (${LABEL_RULE}); the one given is not.`);
  }
  refuseEmpty(
    "run",
    "config",
    values.config,
    "the file LABEL is read from",
    "to find portcullis.json upward",
  );
  refuseEmpty(
    "run",
    "listen-token-file",
    values["listen-token-file"],
    "the file whose first line is the token",
    "for the one kept in the state directory",
  );
  // A server given on the command line reads nothing from a configuration file: a --config
  // beside it would have its approval modes, credentials and limits silently not apply.
  if (values.config !== undefined && (values.url !== undefined || sep !== -1))
    throw new UsageError(
      `run: --config applies only with a LABEL of that file; a server given with ${values.url !== undefined ? "--url" : "'-- COMMAND'"} reads nothing from it.`,
    );
  let server: RunArgs["server"];
  if (values.url !== undefined) {
    if (sep !== -1) throw new UsageError("run: give either --url or '-- COMMAND', not both.");
    if (positionals.length > 0)
      throw new UsageError(`run: ${unexpectedArguments(positionals.length)} with --url.`);
    server = { kind: "url", url: values.url };
  } else if (sep !== -1) {
    const command = args.slice(sep + 1);
    if (command.length === 0)
      throw new UsageError("run: nothing after '--'; give the server command, e.g. -- node dist/server.js.");
    // spawn refuses an empty file name with a TypeError (an internal error, exit 70), and `-- "$CMD"`
    // with CMD unset is how one gets here
    if (command[0] === "")
      throw new UsageError(
        "run: the command after '--' is empty; give the server command, e.g. -- node dist/server.js.",
      );
    // `run LABEL -- COMMAND`: the other form's LABEL given with this one (the word is not shown,
    // as any stray word: it may be something else typed in the wrong place)
    if (positionals.length > 0)
      throw new UsageError(
        `run: ${unexpectedArguments(positionals.length)} before '--': a LABEL runs a server of portcullis.json and cannot go with '-- COMMAND'; to name a server given after '--', use --label NAME.`,
      );
    // a launched server is never remote: these apply to none (a LABEL's may be remote, known
    // only once its portcullis.json is read)
    const remoteOnly = remoteOnlyFlag(values);
    if (remoteOnly) throw new UsageError(`run: ${remoteOnly} applies only with --url.`);
    server = { kind: "command", command };
  } else {
    // `run node dist/server.js` (the '--' forgotten) or `run LABEL extra`: told that words were
    // given (never which: one may be a secret), not "give a server LABEL" as if none was
    if (positionals.length > 1)
      throw new UsageError(
        `run: takes one server LABEL of portcullis.json (${positionals.length} words were given, not shown); a command and its arguments go after '--': portcullis run --label NAME -- COMMAND [ARGS...].`,
      );
    if (positionals.length === 0) {
      // the three forms `run --help` shows: a server reached over HTTP is one too
      throw new UsageError(
        "run: give a server LABEL from portcullis.json, '-- COMMAND [ARGS...]', or --url URL.",
      );
    }
    server = { kind: "label", label: labelArgument("run", positionals[0]!) };
  }
  return {
    values,
    server,
    onChange,
    onExpand,
    approval,
    holdTimeoutMs,
    approvalTimeoutMs,
    requestTtlMs,
    maxMessageBytes,
    auditSync,
    auditArguments,
  };
}

/** The first flag given that applies only to a server reached by URL, or null. */
export function remoteOnlyFlag(values: RunValues): string | null {
  if (values.header?.length) return "--header";
  if (values["header-secret"]?.length) return "--header-secret";
  if (values["allow-insecure"]) return "--allow-insecure";
  return null;
}

/**
 * Node keeps a timer's delay in a signed 32-bit int: a longer one fires after 1 ms, so a wait
 * that re-arms itself would spin, and a request's expiry past the Date range is no date at all.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A flag's duration: digits only (not `0x10`, `1e3`, `010` or an empty `--flag=`), 0 to MAX_TIMER_MS. */
function milliseconds(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = wholeNumber("run", flag, value);
  if (!Number.isInteger(n) || n > MAX_TIMER_MS) {
    throw new UsageError(`run: --${flag} must be a whole number of milliseconds from 0 to ${MAX_TIMER_MS}.`);
  }
  return n;
}

function messageBytes(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = wholeNumber("run", "max-message-bytes", value);
  const problem = messageBytesProblem(n);
  if (problem) throw new UsageError(`run: --max-message-bytes ${problem}.`);
  return n;
}
