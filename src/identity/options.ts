// The one loop behind every command's option parsing here: walk the options before the first
// operand, taking the value of those that have one. Each command differs only in its syntax and
// in what it does with the options it sees.

export interface OptionSyntax {
  /** Options that take a value: the next argument, or the text after `=` when `inline`. */
  valued: { has(name: string): boolean };
  /** `-x=v` and `--name=v` carry their value in the same argument. */
  inline?: boolean;
  /** `--` ends the options (default true). */
  dashDash?: boolean;
  /** Which arguments are options (default: anything starting with "-"). */
  isOption?: (arg: string) => boolean;
}

/** Where the options ended. */
export type OptionsEnd =
  /** args[at] is the first operand; at === args.length when there is none. */
  | { kind: "operand"; at: number }
  /** args[at] follows `--`: an operand whatever it looks like. */
  | { kind: "dashDash"; at: number }
  /** The visitor stopped the scan at the option args[at]. */
  | { kind: "stopped"; at: number };

/**
 * Called for each option with its name, its value (undefined for options without one, or when
 * the value is missing) and its index; returning true stops the scan there.
 */
export type OptionVisitor = (name: string, value: string | undefined, at: number) => boolean;

export function scanOptions(
  args: readonly string[],
  syntax: OptionSyntax,
  visit: OptionVisitor = () => false,
  from = 0,
): OptionsEnd {
  const isOption = syntax.isOption ?? ((a: string) => a.startsWith("-"));
  for (let i = from; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--" && syntax.dashDash !== false) return { kind: "dashDash", at: i + 1 };
    if (!isOption(a)) return { kind: "operand", at: i };
    const at = i;
    const eq = syntax.inline === true ? a.indexOf("=") : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    const value = syntax.valued.has(name) ? (eq > 0 ? a.slice(eq + 1) : args[++i]) : undefined;
    if (visit(name, value, at)) return { kind: "stopped", at };
  }
  return { kind: "operand", at: args.length };
}
