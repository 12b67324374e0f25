/**
 * Arguments part of whose value no review shows. A review keeps an argument's value redacted
 * (src/util/redact.ts): a span the redactor took for a credential is stored as `[redacted]`, so
 * neither the terminal's review nor the console can show it. A one-call approval signs the digest
 * of the real arguments, so a human approving over such a review approves text nobody showed
 * them, and an agent can dress any text up as a credential (`password=$(curl …|sh)`, a long
 * word between a PEM key's markers). Such an approval is refused (decidableRequest, and before the
 * passphrase by `approve` and the console); a denial, or a session approval (which covers the
 * tool's calls whatever their arguments), is not.
 */

import { displayName } from "../catalog/text.js";
import { isSecretName, REDACTED } from "../util/redact.js";

/** What of a review this reads (requests.ts's Review, which imports this file). */
interface ReviewedArguments {
  arguments: { name: string; value: unknown }[];
}

/**
 * The names of the review's arguments with a hidden span in their value: a `[redacted]` in any
 * string of it (text the agent wrote as `[redacted]` counts too: the human cannot tell it from a
 * hidden span). A value left out whole because its name reads like a secret is shown as
 * `name (hidden)` and not counted: that the value is not shown is said where it stands.
 */
export function argumentsPartlyHidden(review: ReviewedArguments): string[] {
  // a review rewritten in the store may hold no list of arguments (`{}`, `null`): nothing is
  // hidden in it, and deciding it is refused anyway (decidableRequest: it no longer matches its row)
  const args: unknown = (review as ReviewedArguments | null)?.arguments;
  if (!Array.isArray(args)) return [];
  const listed = args.filter(
    (a): a is ReviewedArguments["arguments"][number] => typeof a === "object" && a !== null,
  );
  return listed
    .filter((a) => !(a.value === null && isSecretName(a.name)) && holdsRedacted(a.value))
    .map((a) => displayName(a.name));
}

function holdsRedacted(v: unknown): boolean {
  if (typeof v === "string") return v.includes(REDACTED);
  if (Array.isArray(v)) return v.some(holdsRedacted);
  if (typeof v === "object" && v !== null) return Object.values(v).some(holdsRedacted);
  return false;
}

/**
 * Why a one-call approval over such a review is refused, and what the human can do: deny it
 * (`denyHow`: how, where the caller can say it, as ` (portcullis deny ID)`).
 */
export function partlyHiddenReason(names: string[], request: string, denyHow = ""): string {
  return (
    `the review hid part of this call's ${names.length === 1 ? "argument" : "arguments"} ${names.join(", ")} as a secret ([redacted]); ` +
    "a one-call approval is of exactly these arguments, and the hidden part can be any text the agent wrote there in a credential's shape, " +
    `so approval request ${request} cannot be approved for this call: deny it${denyHow}, and have the agent make the call again without credential-shaped text in its arguments`
  );
}
