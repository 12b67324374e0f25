import { redactText } from "./redact.js";

/**
 * Everything human goes to stderr: stdout of `portcullis run` carries MCP only.
 * Callers pass names and digests; every line is still redacted as text on its way out, because
 * a status line can quote a path or a command a secret was part of.
 */
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  /** a status line (`build complete: …`), printed with the server label like every other line */
  status(line: string): void;
  debug(msg: string): void;
  /** false when debug lines go nowhere, so a hot path can skip building one (absent: unknown) */
  readonly debugging?: boolean;
}

export function stderrLogger(label: string, verbose = process.env.PORTCULLIS_DEBUG === "1"): Logger {
  const out = (s: string) => process.stderr.write(`${redactText(s)}\n`);
  return {
    info: (m) => out(`portcullis[${label}]: ${m}`),
    warn: (m) => out(`portcullis[${label}]: warning: ${m}`),
    // The label says which server a line is about: a host's log mixes every server's stderr.
    status: (line) => out(`portcullis[${label}]: ${line}`),
    debug: (m) => {
      if (verbose) out(`portcullis[${label}]: debug: ${m}`);
    },
    debugging: verbose,
  };
}
