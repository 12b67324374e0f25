// The commands that ask for the passphrase of an existing keyring, as README's "Exit codes"
// sentence lists them: one source for the tests that run each of them (a wrong passphrase is exit
// 1 from each; each records late what `passphrase` or `rotate-keys` left unrecorded, or not).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { REPO } from "./paths.js";

/**
 * The commands README's "Exit codes" sentence says exit 1 on a wrong passphrase, each written out
 * (`vault set|rm` is `vault set` and `vault rm`).
 */
export function readmeWrongPassphraseCommands(): string[] {
  const readme = readFileSync(join(REPO, "README.md"), "utf8").replace(/\s+/g, " ");
  const start = "every command that asks for one (";
  const at = readme.indexOf(start);
  expect(at, start).toBeGreaterThanOrEqual(0);
  // the list ends at its ";" (what asks for a new passphrase follows) or its ")"
  const list = readme.slice(at + start.length).split(/[;)]/)[0]!;
  return [...list.matchAll(/`([^`]+)`/g)].flatMap(([, c]) => writtenOut(c!));
}

/** `audit sessions|activity|show` as `audit sessions`, `audit activity`, `audit show`. */
export function writtenOut(written: string): string[] {
  const [head, ...rest] = written.trim().split(" ");
  return rest.length === 0
    ? [head!]
    : rest
        .join(" ")
        .split("|")
        .map((sub) => `${head} ${sub}`);
}
