// redactText over runs of millions of characters. V8 keeps a backtracking entry per repetition of
// a quantifier (`[A-Za-z0-9]{16,}`, a group under `*`) and throws RangeError "Maximum call stack
// size exceeded" past 64 MiB of them: each credential pattern threw on a run of 8 MiB, compiled
// or interpreted (`node --regexp-interpret-all`). A call's argument may be that large. Each shape
// here is redacted as a short one is, the text around it kept.
import { describe, expect, it } from "vitest";
import { REDACTED, redactText } from "../../src/util/redact.js";

const MiB = 1024 * 1024;
const run = (n: number, c = "a") => c.repeat(n);

/** [shape, the credential (8 MiB and more), what it becomes] */
const SHAPES: [string, string, string][] = [
  [
    "a PEM private key",
    `-----BEGIN RSA PRIVATE KEY-----${run(8 * MiB, "A")}-----END RSA PRIVATE KEY-----`,
    `-----BEGIN RSA PRIVATE KEY-----${REDACTED}-----END RSA PRIVATE KEY-----`,
  ],
  ["a bearer token", `Bearer ${run(8 * MiB)}`, `Bearer ${REDACTED}`],
  // base64url of a JSON document begins eyJ: a large one reads as a JWT when it has two dots
  ["a JWT", `eyJ${run(4 * MiB)}.${run(4 * MiB)}.${run(1000)}`, REDACTED],
  ["a GitHub token", `ghp_${run(8 * MiB)}`, REDACTED],
  ["a fine-grained GitHub token", `github_pat_${run(8 * MiB)}`, REDACTED],
  ["a GitLab token", `glpat-${run(8 * MiB)}`, REDACTED],
  ["a Slack token", `xoxb-${run(8 * MiB)}`, REDACTED],
  ["an sk- key", `sk-live-${run(8 * MiB)}`, REDACTED],
  ["an npm token", `npm_${run(8 * MiB)}`, REDACTED],
  ["a Google key", `AIza${run(8 * MiB)}`, REDACTED],
  ["a name=value pair", `password=${run(8 * MiB)}`, `password=${REDACTED}`],
  [
    "a long name before =",
    `password${run(4 * MiB, "a_")}=hunter2hunter2`,
    `password${run(4 * MiB, "a_")}=${REDACTED}`,
  ],
  ["a value of schema type words", `password=${run(8 * MiB, "string|")}x`, `password=${REDACTED}`],
];

describe("redactText over millions of characters", () => {
  it.each(SHAPES)("%s: redacted as a short one is, the text around it kept", (_, secret, shown) => {
    expect(redactText(`before ${secret} after`)).toBe(`before ${shown} after`);
  });

  it("a long name that says what happened to a credential is still not taken for one", () => {
    const name = `${run(4 * MiB, "a_")}token_denied`;
    expect(redactText(`${name}: the vault is locked`)).toBe(`${name}: the vault is locked`);
  });

  it("a long JWT header alone is kept, as a short one is", () => {
    const text = `eyJ${run(8 * MiB)} then`;
    expect(redactText(text)).toBe(text);
  });
});
