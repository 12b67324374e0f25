// doctor's credential-in-env classifier, searched for counterexamples: a credential it misses, a
// value the host fills in that it reports, and above all a value that reaches what it prints.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  clearArgFindings,
  clearCredentialFinding,
  credentialInClear,
  NOT_A_FLAG_CREDENTIAL,
} from "../../src/onboard/doctorEnv.js";
import { isSecretName } from "../../src/util/redact/names.js";

const word = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,11}$/);
const separator = fc.constantFrom("_", "-", ".", "__");
/** A value written out: not blank, no `${`, not a switch word. */
const writtenValue = fc
  .string({ minLength: 1, maxLength: 80, unit: "grapheme" })
  .filter(
    (v) =>
      v.trim() !== "" &&
      !v.includes("${") &&
      !/^(true|false|yes|no|on|off|enabled|disabled|none|null)$/i.test(v.trim()),
  );
const credentialWord = fc.constantFrom(
  "TOKEN",
  "SECRET",
  "PASSWORD",
  "API_KEY",
  "APIKEY",
  "AUTH",
  "PASS",
  "PRIVATE_KEY",
  "COOKIE",
  "CREDENTIALS",
);
const whereWord = fc.constantFrom(
  "FILE",
  "PATH",
  "DIR",
  "URL",
  "URI",
  "ENDPOINT",
  "HOST",
  "PORT",
  "USER",
  "MODE",
  "TYPE",
  "ID",
);
const runs = [
  { kind: "other" as const },
  { kind: "label" as const, label: "echo", file: "/p/portcullis.json" },
];

describe("doctor: a credential in an entry's env, in clear", () => {
  it("a name ending in a credential's word, with a value written out, is reported, in any case and after any prefix", () => {
    fc.assert(
      fc.property(
        word,
        separator,
        credentialWord,
        fc.boolean(),
        writtenValue,
        (prefix, sep, cred, lower, value) => {
          const name = `${prefix}${sep}${lower ? cred.toLowerCase() : cred}`;
          expect(credentialInClear(name, value)).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("the camelCase form too: `dbPassword` is, `tokenFile` is not", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/), writtenValue, (prefix, value) => {
        expect(credentialInClear(`${prefix}Password`, value)).toBe(true);
        expect(credentialInClear(`${prefix}TokenFile`, value)).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it("a name whose last word says where or how the credential is found is not reported", () => {
    fc.assert(
      fc.property(
        word,
        credentialWord,
        separator,
        whereWord,
        writtenValue,
        (prefix, cred, sep, where, value) => {
          expect(credentialInClear(`${prefix}_${cred}${sep}${where}`, value)).toBe(false);
        },
      ),
      { numRuns: 2000 },
    );
  });

  // biome-ignore lint/suspicious/noTemplateCurlyInString: a host's own expansion, as the host file holds it
  it("a value the host fills in (a `${…}` anywhere in it), a blank one or a switch word is never reported, whatever the name", () => {
    const filled = fc
      .tuple(
        fc.string({ maxLength: 20 }),
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.string({ maxLength: 20 }),
      )
      .filter(([, inner]) => !inner.includes("}") && !inner.includes(":-"))
      .map(([before, inner, after]) => `${before}\${${inner}}${after}`);
    const blankOrSwitch = fc.oneof(
      fc.stringMatching(/^\s*$/),
      fc.constantFrom("true", "FALSE", " yes ", "off", "On", "none", "null", "Enabled"),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.oneof(filled, blankOrSwitch), (name, value) => {
        expect(credentialInClear(`${name}_TOKEN`, value)).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  // biome-ignore lint/suspicious/noTemplateCurlyInString: a host's own expansion, as the host file holds it
  it("a default written beside what the host fills in (`${VAR:-value}`) is in the file: reported; an empty one is not", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Z][A-Z0-9_]{0,11}$/),
        fc.string({ minLength: 1, maxLength: 30 }).filter((d) => d.trim() !== "" && !d.includes("}")),
        (variable, dflt) => {
          expect(credentialInClear("API_TOKEN", `\${${variable}:-${dflt}}`)).toBe(true);
          expect(credentialInClear("API_TOKEN", `Bearer \${${variable}:-${dflt}}`)).toBe(true);
          expect(credentialInClear("API_TOKEN", `\${${variable}:-}`)).toBe(false);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("a header held in a variable is the credential itself: AUTH_HEADER, AUTHORIZATION_HEADER", () => {
    for (const name of ["AUTH_HEADER", "AUTHORIZATION_HEADER", "apiKeyHeader", "X_API_TOKEN_HEADER"])
      expect(credentialInClear(name, "Bearer abc123"), name).toBe(true);
  });

  it("a name that says nothing of a secret is never reported (the redaction's own list decides)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), writtenValue, (name, value) => {
        if (!isSecretName(name)) expect(credentialInClear(name, value)).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });

  it("what doctor prints never holds the value, nor a part of it, whatever the name, key and value", () => {
    // values drawn from characters no name, key or sentence here holds
    const value = fc.string({ minLength: 6, maxLength: 60, unit: fc.constantFrom("Ж", "Ψ", "ק", "λ", "ß") });
    fc.assert(
      fc.property(
        word,
        credentialWord,
        fc.string({ maxLength: 20 }),
        value,
        fc.constantFrom(...runs),
        (prefix, cred, key, v, run) => {
          const f = clearCredentialFinding(
            "/h/.mcp.json",
            key.replace(/[ЖΨקλß]/g, ""),
            `${prefix}_${cred}`,
            v,
            run,
          );
          expect(f).not.toBeNull();
          const printed = `${f!.what}\n${f!.next}`;
          for (let i = 0; i + 3 <= v.length; i++) expect(printed).not.toContain(v.slice(i, i + 3));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("a value that is not a string (a number, an object) is not read", () => {
    for (const v of [1234, true, null, { a: "b" }, ["x"]])
      expect(clearCredentialFinding("/h", "k", "GITHUB_TOKEN", v, runs[0]!)).toBeNull();
  });
});

describe("doctor: a credential on an entry's command line, in clear", () => {
  const lowerWord = fc.stringMatching(/^[a-z][a-z0-9]{0,11}$/).filter((w) => !NOT_A_FLAG_CREDENTIAL.has(w));
  const flagOf = (prefix: string, cred: string) => `--${prefix}-${cred.toLowerCase().replace(/_/g, "-")}`;
  // values drawn from characters no name, key or sentence here holds, with what makes a credential
  const value = fc
    .string({ minLength: 6, maxLength: 60, unit: fc.constantFrom("Ж", "Ψ", "ק", "λ", "ß") })
    .map((v) => `${v}Q7z`);

  it("the value after a credential's flag, or after its '=', is reported once per flag; never printed", () => {
    fc.assert(
      fc.property(lowerWord, credentialWord, value, fc.boolean(), (prefix, cred, v, joined) => {
        const flag = flagOf(prefix, cred);
        const args = ["serve", "--verbose", ...(joined ? [`${flag}=${v}`] : [flag, v]), "--port", "8080"];
        const found = clearArgFindings("/h/.mcp.json", "srv", args);
        expect(found).toHaveLength(1);
        expect(found[0]!.what).toContain(`"${flag}"`);
        const printed = `${found[0]!.what}\n${found[0]!.next}`;
        for (let i = 0; i + 3 <= v.length; i++) expect(printed).not.toContain(v.slice(i, i + 3));
        // the same flag twice: one finding
        expect(clearArgFindings("/h/.mcp.json", "srv", [...args, flag, v])).toHaveLength(1);
      }),
      { numRuns: 2000 },
    );
  });

  it("a word that starts with '-' but is no plain long flag is never named: a random key, a glued short option", () => {
    // (a finding names its flag: one that is the secret itself would print it)
    const key = fc
      .stringMatching(/^-{1,2}[A-Za-z0-9_-]{16,40}$/)
      .filter((k) => /[A-Z]/.test(k) || !k.startsWith("--"));
    fc.assert(
      fc.property(key, value, (k, v) => {
        for (const f of clearArgFindings("/h", "k", ["--api-key", k, "serve", k, v, `${k}=${v}`]))
          expect(`${f.what}\n${f.next}`).not.toContain(k);
      }),
      { numRuns: 2000 },
    );
    for (const args of [
      ["--api-key", "-Xy9PinQ2wErTy7uIo0pA", "serve"],
      ["-u", "root", "-pMySecretPw99", "mydb"],
      ["--token:ghp_abc123XYZ", "x"],
    ]) {
      const printed = JSON.stringify(clearArgFindings("/h", "k", args));
      for (const a of args.filter((x) => x.length > 6)) expect(printed).not.toContain(a);
    }
  });

  it("not reported: what real servers' command lines hold after a flag that mentions a credential", () => {
    const fine: string[][] = [
      ["--token-limit", "1000"],
      ["--max-tokens", "4096"],
      ["--tokens", "5"],
      ["--token-budget", "500"],
      ["--tokenizer", "cl100k_base"],
      ["--no-auth", "serve"],
      ["--password-stdin", "mydatabase1"],
      ["--passwordless", "Example123"],
      ["--auth", "bearer"],
      ["--auth-type", "oauth"],
      ["--auth-server", "https://login.example.com"],
      ["--private-key", "/home/u/.ssh/id_ed25519"],
      ["--secret", "/run/secrets/api"],
      ["--credentials", "~/.aws/credentials"],
      ["--credential-process", "aws-vault exec x"],
      ["--api-key-command", "pass show api"],
      ["--token-cmd", "gh auth token"],
      ["--secret-arn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:x"],
      ["--session-store", "redis"],
      ["--sessions", "5"],
      ["--pin", "1234"],
      ["--signature-version", "v4"],
      ["--jwt-issuer", "https://issuer.example.com"],
      ["--cookie-jar", "./cookies.txt"],
      ["--key-file", "./k.pem"],
      ["--secret-name", "prod-db"],
      ["--api-key-env", "API_KEY"],
      ["--listen-max-sessions", "10"],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a host's own ${VAR}, not a template
      ["--api-key", "${API_KEY}"],
      ["--token", "--verbose"],
    ];
    for (const args of fine) expect(clearArgFindings("/h", "k", args), args.join(" ")).toEqual([]);
    fc.assert(
      fc.property(lowerWord, credentialWord, whereWord, value, (prefix, cred, where, v) => {
        expect(clearArgFindings("/h", "k", [`${flagOf(prefix, cred)}-${where.toLowerCase()}`, v])).toEqual(
          [],
        );
        if (!isSecretName(prefix)) expect(clearArgFindings("/h", "k", [`--${prefix}`, v])).toEqual([]);
      }),
      { numRuns: 2000 },
    );
    // the walkthrough's own case, and args that are not a list
    expect(clearArgFindings("/h", "k", ["--api-key", "zzTopSecret999"])).toHaveLength(1);
    expect(clearArgFindings("/h", "k", ["--password=Hunter2-Correct"])).toHaveLength(1);
    for (const args of [undefined, "--api-key x", { a: 1 }])
      expect(clearArgFindings("/h", "k", args)).toEqual([]);
  });
});
