import { createCipheriv, createDecipheriv, diffieHellman, hkdfSync, type KeyObject } from "node:crypto";
import { newX25519PrivateKey, rawX25519PublicKey, x25519PublicKeyFromRaw } from "../keyring/x25519.js";
import { newRecord } from "./record.js";

/**
 * Sealing audit events to the audit public key (docs/audit-format.md, "Sealing").
 *
 *   shared = X25519(ephemeral private, audit public)            (all-zero refused)
 *   key    = HKDF-SHA256(ikm = shared, salt = epk || audit public key,
 *                        info = "portcullis audit v1 chacha20-poly1305", 32 bytes)
 *   sealed = ChaCha20-Poly1305(key, nonce, plaintext = JSON of the event, aad = header bytes)
 *
 * A writer makes one ephemeral key per sealing session (like an HPKE sender
 * context) and seals up to `recordsPerSession` records under it, each with its own
 * nonce (a 96-bit big-endian counter); the header carries epk and nonce.
 */

export const HKDF_INFO = Buffer.from("portcullis audit v1 chacha20-poly1305");
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
const AEAD = "chacha20-poly1305";

export function deriveRecordKey(shared: Uint8Array, epkRaw: Uint8Array, recipientRaw: Uint8Array): Buffer {
  if (shared.every((b) => b === 0)) throw new Error("X25519 produced the all-zero shared secret");
  return Buffer.from(hkdfSync("sha256", shared, Buffer.concat([epkRaw, recipientRaw]), HKDF_INFO, 32));
}

/**
 * The whole record, header || 0x0A || ciphertext || tag, sealed with `key` under
 * `nonce` with the header as associated data — written into one buffer.
 */
export function sealRecord(
  key: Uint8Array,
  nonce: Uint8Array,
  header: string,
  plaintext: Uint8Array,
): Buffer {
  const record = newRecord(header, plaintext.length + TAG_BYTES);
  const c = createCipheriv(AEAD, key, nonce, { authTagLength: TAG_BYTES });
  c.setAAD(record.subarray(0, header.length), { plaintextLength: plaintext.length });
  const body = header.length + 1;
  record.set(c.update(plaintext), body);
  c.final(); // a stream cipher: nothing is held back
  record.set(c.getAuthTag(), body + plaintext.length);
  return record;
}

/**
 * The event bytes of a sealed payload, `header` being the record's header text (its
 * bytes, one per character). Throws when the tag does not authenticate (wrong key,
 * modified header or payload).
 */
export function unseal(key: Uint8Array, nonce: Uint8Array, header: string, sealed: Uint8Array): Buffer {
  if (sealed.length < TAG_BYTES) throw new Error("sealed payload shorter than its tag");
  const body = sealed.subarray(0, sealed.length - TAG_BYTES);
  const d = createDecipheriv(AEAD, key, nonce, { authTagLength: TAG_BYTES });
  d.setAAD(Buffer.from(header, "latin1"), { plaintextLength: body.length });
  d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([d.update(body), d.final()]);
}

/**
 * The raw bytes of each audit public key a session was started for, read once: a writer starts a
 * session every 1,024 records for the same recipient, and each read is a DER export (OpenSSL's
 * encoder, hundreds of microseconds). Public bytes; held as long as the key object is.
 */
const recipientBytes = new WeakMap<KeyObject, Buffer>();
function rawRecipient(recipient: KeyObject): Buffer {
  let raw = recipientBytes.get(recipient);
  if (raw === undefined) {
    raw = rawX25519PublicKey(recipient);
    recipientBytes.set(recipient, raw);
  }
  return raw;
}

/** One writer's sealing context: an ephemeral key, the derived AEAD key, a nonce counter. */
export class SealingSession {
  private counter = 0n;
  private constructor(
    readonly epk: string,
    private readonly key: Buffer,
  ) {}

  /** A fresh ephemeral key pair; `ephemeralPrivate` is only given by the test vectors. */
  static start(recipient: KeyObject, ephemeralPrivate?: KeyObject): SealingSession {
    const priv = ephemeralPrivate ?? newX25519PrivateKey();
    const epkRaw = rawX25519PublicKey(priv);
    const shared = diffieHellman({ privateKey: priv, publicKey: recipient });
    const key = deriveRecordKey(shared, epkRaw, rawRecipient(recipient));
    shared.fill(0);
    return new SealingSession(epkRaw.toString("base64url"), key);
  }

  get sealed(): number {
    return Number(this.counter);
  }

  /** The next nonce: the 96-bit big-endian record counter of this session. */
  nextNonce(): Buffer {
    const n = Buffer.alloc(NONCE_BYTES);
    n.writeBigUInt64BE(this.counter++, 4);
    return n;
  }

  /** The record (header || 0x0A || sealed) of one event. */
  sealRecord(nonce: Uint8Array, header: string, plaintext: Uint8Array): Buffer {
    return sealRecord(this.key, nonce, header, plaintext);
  }

  close(): void {
    this.key.fill(0);
  }
}

/** Opens records sealed to one audit key; caches the derived key of each writer session. */
export class RecordOpener {
  private readonly recipientRaw: Buffer;
  private readonly keys = new Map<string, Buffer>();
  constructor(private readonly privateKey: KeyObject) {
    this.recipientRaw = rawX25519PublicKey(privateKey);
  }

  open(epk: string, nonce: string, header: string, sealed: Uint8Array): Buffer {
    let key = this.keys.get(epk);
    if (!key) {
      const epkRaw = Buffer.from(epk, "base64url");
      const shared = diffieHellman({
        privateKey: this.privateKey,
        publicKey: x25519PublicKeyFromRaw(epkRaw),
      });
      key = deriveRecordKey(shared, epkRaw, this.recipientRaw);
      this.keys.set(epk, key);
    }
    return unseal(key, Buffer.from(nonce, "base64url"), header, sealed);
  }
}
