// The command a failure line names (README, "Commands"): a group's subcommand with the group
// ("vault list", "audit verify"), else the command word.

const GROUPS = ["audit", "catalog", "passkey", "vault"];

/** `args` as typed, the subcommand right after the group. */
export function commandNamed(args: readonly string[]): string {
  return args.slice(0, GROUPS.includes(args[0]!) ? 2 : 1).join(" ");
}
