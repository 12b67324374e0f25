// The commands that record late what `portcullis passphrase` or `portcullis rotate-keys` left out
// of the audit chain (killed between their rename of keyring.json and their record, or finding the
// store unwritable then). One list each, for every place that names them (the two commands' help
// and their warnings), held to what the commands do by test/cli/late-record-commands.test.ts.

/**
 * The commands that append a rotation's record late (recordLateRotation, approval/rotation.ts):
 * only those that check the approver key against the chain's pins (pinnedSigner, ensurePinned,
 * checkApproverKey: pin.ts). unlock and vault set|rm open the vault, not the pins.
 */
export const RECORDS_LATE_ROTATION = [
  "approve",
  "deny",
  "audit sessions",
  "audit activity",
  "audit show",
  "passphrase",
  "rotate-keys",
] as const;

/**
 * The commands that record a passphrase change late (recordLateChange, approval/lateWrapping.ts):
 * every command that opens the keyring with the passphrase and the store. Those above (approve,
 * deny and rotate-keys through pinnedSigner; audit sessions|activity|show and passphrase through
 * checkApproverKey: pin.ts), and unlock and vault set|rm through unlockWithPassphrase
 * (vaultAccess.ts).
 */
export const RECORDS_LATE_CHANGE = [...RECORDS_LATE_ROTATION, "unlock", "vault set", "vault rm"] as const;

/**
 * The list as the help and the warnings write it, as README writes its lists: commands of one
 * group together (`approve, deny, audit sessions|activity|show, …, vault set|rm`).
 */
export function commandList(commands: readonly string[]): string {
  const groups: { head: string; subs: string[] }[] = [];
  for (const c of commands) {
    const [head, sub] = c.split(" ") as [string, string | undefined];
    const last = groups.at(-1);
    if (sub !== undefined && last?.head === head && last.subs.length > 0) last.subs.push(sub);
    else groups.push({ head, subs: sub === undefined ? [] : [sub] });
  }
  return groups.map((g) => (g.subs.length ? `${g.head} ${g.subs.join("|")}` : g.head)).join(", ");
}
