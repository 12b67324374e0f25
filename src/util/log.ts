/**
 * Everything human goes to stderr: stdout of `portcullis run` carries MCP only.
 * Secret values never reach this module: callers pass names and digests.
 */
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  /** a status line, printed as is (docs/design.md, "Command line") */
  status(line: string): void;
  debug(msg: string): void;
}

export function stderrLogger(label: string, verbose = process.env.PORTCULLIS_DEBUG === "1"): Logger {
  const out = (s: string) => process.stderr.write(`${s}\n`);
  return {
    info: (m) => out(`portcullis[${label}]: ${m}`),
    warn: (m) => out(`portcullis[${label}]: warning: ${m}`),
    status: (line) => out(line),
    debug: (m) => {
      if (verbose) out(`portcullis[${label}]: debug: ${m}`);
    },
  };
}
