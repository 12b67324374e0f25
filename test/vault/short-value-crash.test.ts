// A value the vault released that is shorter than 8 characters (a PIN) in what a crashing server
// writes to stderr: its exact occurrence, and its other forms, are scrubbed like a long value's
// (docs/security.md, "Limits"); only a piece of it (fewer than 8 of its characters, shown cut
// short) is not looked for. A real gateway, the real vault (env delivery), a server that prints
// the value and then dies of an uncaught exception quoting it.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret } from "./helpers.js";

const PIN = "k9Z";
const MARK = "[redacted:pin]";
const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe("a short released value in a crashing server's stderr", () => {
  it("is scrubbed where it is written whole and in its forms; a piece of it is not", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => runCli(["lock"], { stateDir }));
    await storeSecret(stateDir, "pin", PIN, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const dir = tempDir("portcullis-short-pin-");
    const server = [
      "const pin = process.env.PIN;",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the fixture server's own source text, its template literals included
      "console.error(`pin=${pin} b64=${Buffer.from(pin).toString('base64')} hex=${Buffer.from(pin).toString('hex')} start=${pin.slice(0, 2)}!`);",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the fixture server's own source text, its template literals included
      "setTimeout(() => { throw new Error(`bad pin ${pin}`); }, 50);",
    ].join("\n");
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({
        servers: {
          short: {
            command: NODE,
            args: ["-e", server],
            credentials: { PIN: { secret: "pin", deliver: "env" } },
          },
        },
      }),
    );
    const gw = rawGateway({ args: ["short"], cwd: dir, stateDir });
    cleanup.push(() => gw.close());
    for (let i = 0; i < 400 && !/Error: bad pin/.test(gw.stderr()); i++)
      await new Promise((r) => setTimeout(r, 50));
    const err = gw.stderr();
    expect(err).toContain(`pin=${MARK} b64=${MARK} hex=${MARK} start=k9!`);
    expect(err).toContain(`Error: bad pin ${MARK}`);
    expect(err).not.toContain(PIN);
  });
});
