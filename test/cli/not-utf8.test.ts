// A file portcullis reads as text holds bytes that are not UTF-8 (a Latin-1 "é", random bytes):
// each was read as U+FFFD without a word. wrap then wrote the host file back, and its backup,
// with those bytes replaced (and unwrap said "restored byte for byte" over the damage); run gave
// the server another argument than the file's; init made a keyring under another passphrase than
// the file's, one any other bytes of the same count also give. Now each is refused, exit 2, naming
// the file and where the first such byte is, and nothing is written. A U+FFFD spelled in UTF-8 and
// a byte order mark are text, and still read. The real CLI.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const LATIN1_E = Buffer.from([0xe9]);

describe("a file that is not UTF-8", () => {
  it("is not wrapped: the host file stays byte for byte, and no backup is written", async () => {
    const dir = tempDir();
    const file = join(dir, ".mcp.json");
    const bytes = Buffer.concat([
      Buffer.from('{"mcpServers": {"a": {"command": "node", "args": ["s.js"]}},\n  "note": "caf'),
      LATIN1_E,
      Buffer.from('"}\n'),
    ]);
    writeFileSync(file, bytes);
    const r = await runCli(["wrap", file, "--state-dir", join(dir, "state")], {
      cwd: dir,
      env: { HOME: dir },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis wrap: ${file} cannot be read (it is not UTF-8 text: line 2, column 15 holds a byte that is not UTF-8; save it as UTF-8); nothing was written.\n`,
    );
    expect(readFileSync(file).equals(bytes)).toBe(true);
    expect(existsSync(`${file}.portcullis-backup`)).toBe(false);
  });

  it("in UTF-8, U+FFFD itself and a byte order mark are wrapped and given back byte for byte", async () => {
    const dir = tempDir();
    const file = join(dir, ".mcp.json");
    const bytes = Buffer.from(
      '\uFEFF{"mcpServers": {"a": {"command": "node", "args": ["\uFFFD", "café"]}}}\n',
    );
    writeFileSync(file, bytes);
    const opts = { cwd: dir, env: { HOME: dir } };
    const wrap = await runCli(["wrap", file, "--state-dir", join(dir, "state")], opts);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(readFileSync(`${file}.portcullis-backup`).equals(bytes)).toBe(true);
    const unwrap = await runCli(["unwrap", file, "--state-dir", join(dir, "state")], opts);
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(readFileSync(file).equals(bytes)).toBe(true);
  });

  it("as portcullis.json is refused by run, naming the file, the line and the column", async () => {
    const dir = tempDir();
    const file = join(dir, "portcullis.json");
    writeFileSync(
      file,
      Buffer.concat([
        Buffer.from('{"servers": {"a": {"command": "node",\n"args": ["\uFFFD", "caf'),
        LATIN1_E,
        Buffer.from('"]}}}'),
      ]),
    );
    const r = await runCli(["run", "a"], { stateDir: newStateDir(), cwd: dir, input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: ${file}: is not UTF-8 text: line 2, column 19 holds a byte that is not UTF-8; save it as UTF-8.\n`,
    );
  });

  it("as PORTCULLIS_PASSPHRASE_FILE is refused by init: no keyring under another passphrase than the file's", async () => {
    const dir = tempDir();
    const passphrase = join(dir, "passphrase");
    writeFileSync(passphrase, Buffer.from([0xff, 0xfe, 0xfd, 0xfc, 0x80, 0x81, 0x82, 0x83, 0x0a]), {
      mode: 0o600,
    });
    const stateDir = join(dir, "state");
    const r = await runCli(["init", "--state-dir", stateDir], {
      env: { PORTCULLIS_PASSPHRASE_FILE: passphrase, PORTCULLIS_INSECURE_TEST_KDF: "1" },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis init: PORTCULLIS_PASSPHRASE_FILE (${passphrase}): it is not UTF-8 text: line 1, column 1 holds a byte that is not UTF-8; save it as UTF-8.\n`,
    );
    expect(existsSync(stateDir)).toBe(false);
  });
});
