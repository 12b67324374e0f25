import { type ParseArgsConfig, parseArgs } from "node:util";
import { UsageError } from "./errors.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * node:util parseArgs with errors turned into one-sentence usage errors that
 * name the command and the flag.
 */
export function parse<O extends Options>(
  command: string,
  args: string[],
  options: O,
  allowPositionals = true,
) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true, tokens: true });
  } catch (e) {
    // node's hint, shortened: "… place it at the end of the command after '--', as in …"
    const msg = (e as Error).message.replace(
      /\. To specify a positional argument.*$/s,
      " (a value that starts with '-' goes after '--')",
    );
    throw new UsageError(`${command}: ${msg.charAt(0).toLowerCase()}${msg.slice(1)}`);
  }
}

export function oneOf<T extends string>(
  command: string,
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) {
    throw new UsageError(`${command}: --${flag} must be one of ${allowed.join(", ")} (got "${value}").`);
  }
  return value as T;
}
