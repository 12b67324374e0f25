// What `portcullis rotate-keys` prints, as text and as --json, scanned for key material and
// secrets: every base64 value of keyring.json before and after the rotation (wrapped keys, public
// keys, salts, the rotation record's signature), the vault's secret values and the passphrases.
// Key ids (hex digests of public keys) are what it is meant to print. What it would catch: a
// summary that carries a key, a wrapped key or the pending rotation record, or echoes a secret.
// Real CLI processes on a real vault; the second rotation runs from the first one's keyring.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { withPassphrase } from "../helpers/passphraseChange.js";
import { rotateByCli } from "../helpers/rotation.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { vaultWith } from "../helpers/vaultState.js";

const SECOND = "the passphrase of the first printed rotation";
const THIRD = "the passphrase of the second printed rotation";
const SECRET = "rotate-keys-output-value-77c1";
const WEB = "rotate-keys-output-web-value-e5a0";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Every string of keyring.json that is key material, a salt, a signature: all but key ids and names. */
function keyringValues(stateDir: string): string[] {
  const out: string[] = [];
  const walk = (v: unknown, key: string) => {
    if (typeof v === "string") {
      if (
        key !== "keyId" &&
        key !== "fromKeyId" &&
        key !== "approverKeyId" &&
        /^[A-Za-z0-9+/_=-]{16,}$/.test(v)
      )
        out.push(v);
    } else if (Array.isArray(v)) for (const x of v) walk(x, key);
    else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) walk(x, k);
  };
  walk(JSON.parse(readFileSync(join(stateDir, "keyring.json"), "utf8")), "");
  return out;
}

/** The parts of `text` that are any of `values` (or a 16-character piece of one). */
function leaked(text: string, values: string[]): string[] {
  return values.filter((v) => {
    for (let i = 0; i + 16 <= v.length; i += 8) if (text.includes(v.slice(i, i + 16))) return true;
    return false;
  });
}

it("rotate-keys prints no key, wrapped key, signature, secret or passphrase, as text or as JSON", async () => {
  const stateDir = await vaultWith("api", SECRET, (c) => cleanup.push(c), false);
  const web = await runCli(["vault", "set", "web", "--from-stdin", "--host", "api.example:443"], {
    stateDir,
    env: passphraseEnv(),
    input: WEB,
  });
  expect(web.code, web.stderr).toBe(0);
  expect((await runCli(["lock"], { stateDir })).code).toBe(0);

  const before = keyringValues(stateDir);
  const asJson = await rotateByCli(stateDir, passphraseEnv(), SECOND, ["--json"]);
  expect(asJson.code, asJson.stderr).toBe(0);
  const middle = keyringValues(stateDir);
  const asText = await rotateByCli(stateDir, withPassphrase(SECOND), THIRD);
  expect(asText.code, asText.stderr).toBe(0);
  const after = keyringValues(stateDir);

  // the scan can fail: the keyrings hold wrapped keys, salts, public keys and the rotation's signature
  expect(before.length).toBeGreaterThanOrEqual(6);
  expect(middle.length).toBeGreaterThan(before.length);
  const secrets = [...new Set([...before, ...middle, ...after]), SECRET, WEB, TEST_PASSPHRASE, SECOND, THIRD];
  for (const r of [asJson, asText]) {
    expect(leaked(r.stdout, secrets)).toEqual([]);
    expect(leaked(r.stderr, secrets)).toEqual([]);
  }
  // and what it does print: key ids and counts
  const summary = JSON.parse(asJson.stdout) as Record<string, unknown>;
  expect(Object.keys(summary).sort()).toEqual(
    [
      "approverKeyId",
      "auditKeyId",
      "auditRecord",
      "egressCaResealed",
      "grantsNoLongerHonoured",
      "keyring",
      "previousApproverKeyId",
      "previousAuditKeyId",
      "rotated",
      "rotationRecord",
      "secretsResealed",
    ].sort(),
  );
  expect(summary.secretsResealed).toBe(2);
  expect(asText.stdout).toContain("2 vault secret(s) and the egress CA key resealed");
}, 30_000);
