/**
 * How `vault set` reads a secret's value: typed on the terminal with echo off, or read from
 * standard input (--from-stdin), bounded in size, UTF-8 or refused, and every buffer that held it
 * wiped. Apart from vaultSet.ts: reading a value safely is its own concern, whatever is done with it.
 */
import { MAX_VALUE_BYTES, VaultError } from "../vault/secrets.js";
import { PassphraseError, readHiddenLine } from "./passphrase.js";

export async function typedValue(name: string): Promise<string> {
  try {
    return await readHiddenLine(`Value of ${name}: `);
  } catch (e) {
    if (e instanceof PassphraseError && /no terminal/.test(e.message))
      throw new VaultError(
        "there is no terminal to type the value on; give it on standard input with --from-stdin",
      );
    throw e;
  }
}

export async function readStdinValue(): Promise<string> {
  const chunks: Buffer[] = [];
  let read = 0;
  for await (const c of process.stdin) {
    chunks.push(c as Buffer);
    read += (c as Buffer).length;
    // Past the largest value (and its line break) nothing more is read: `< /dev/zero`, or a
    // large file given by mistake, was read whole into memory before being refused (for ever,
    // for a stream that does not end)
    if (read > MAX_VALUE_BYTES + 2) {
      for (const chunk of chunks) chunk.fill(0);
      throw new VaultError(`the value is over ${MAX_VALUE_BYTES} bytes; nothing was stored`);
    }
  }
  const bytes = Buffer.concat(chunks);
  for (const chunk of chunks) chunk.fill(0);
  try {
    // fatal: bytes that are not UTF-8 would otherwise each become U+FFFD, and a value other
    // than the one given would be stored (and delivered) without a word
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes).replace(/\r?\n$/, "");
  } catch {
    throw new VaultError(
      "standard input is not UTF-8 text, and a secret is stored as text (give binary data base64- or hex-encoded); nothing was stored",
    );
  } finally {
    bytes.fill(0);
  }
}
