/**
 * Command lines shown to people (status, reviews, the host's log) may carry
 * secrets: a token flag, an env-style assignment, a JSON blob of settings.
 */
const MAX_COMMAND_CHARS = 300;
const MAX_ARGUMENT_CHARS = 120;

/** Replaces values that look like secrets and cuts long command lines. */
export function displayCommand(argv: string[]): string {
  const out: string[] = [];
  let hideNext = false;
  for (const a of argv) {
    if (hideNext) {
      out.push("[redacted]");
      hideNext = false;
      continue;
    }
    const m =
      /^(--?[A-Za-z0-9_.-]*(?:secret|password|passphrase|token|api[-_]?key|auth|credential)[A-Za-z0-9_.-]*)(=.*)?$/i.exec(
        a,
      );
    if (m) {
      if (m[2] !== undefined) out.push(`${m[1]}=[redacted]`);
      else {
        out.push(a);
        hideNext = true;
      }
      continue;
    }
    const env =
      /^([A-Za-z_][A-Za-z0-9_]*(?:SECRET|PASSWORD|PASSPHRASE|TOKEN|API_?KEY)[A-Za-z0-9_]*)=.*/i.exec(a);
    if (env) out.push(`${env[1]}=[redacted]`);
    // Structured or long arguments (an --env '{...}' blob, an inline script, a bearer
    // string) can carry anything: show their size, never their content.
    else if (/^\s*[[{]/.test(a)) out.push(`[${a.length}-char JSON argument]`);
    else if (a.length > MAX_ARGUMENT_CHARS) out.push(`[${a.length}-char argument]`);
    else out.push(a);
  }
  const text = out.map((a) => (/^[A-Za-z0-9_./:=@%+,[\]-]+$/.test(a) ? a : JSON.stringify(a))).join(" ");
  return text.length > MAX_COMMAND_CHARS ? `${text.slice(0, MAX_COMMAND_CHARS)}…` : text;
}
