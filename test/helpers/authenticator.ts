// A software WebAuthn authenticator: what a security key or Touch ID does, in node:crypto. An ES256
// (P-256) key pair per credential, "none" attestation, authenticatorData with the UP and UV flags
// and a signature counter, clientDataJSON with the challenge and origin. Tests use it to register
// passkeys and to answer decision challenges, and to make the flawed answers an attacker would.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { isoCBOR } from "@simplewebauthn/server/helpers";

const UP = 0x01;
const UV = 0x04;
const AT = 0x40;

export const TEST_RP_ID = "localhost";
export const TEST_ORIGIN = "http://localhost:7345";

const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");

export interface AnswerOptions {
  /** the user-verification flag (default set) */
  uv?: boolean;
  origin?: string;
  rpId?: string;
  /** the clientData type (default webauthn.get) */
  type?: string;
}

export class SoftAuthenticator {
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  counter = 0;

  /** `credentialId`: random unless given (an ID whose base64url starts with '-', for the CLI) */
  constructor(readonly credentialId: Buffer = randomBytes(16)) {
    const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
    this.privateKey = pair.privateKey;
    this.publicKey = pair.publicKey;
  }

  get id(): string {
    return b64u(this.credentialId);
  }

  /** The credential public key as COSE_Key (EC2, ES256, P-256). */
  coseKey(): Uint8Array {
    const jwk = this.publicKey.export({ format: "jwk" });
    return isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, new Uint8Array(Buffer.from(jwk.x!, "base64url"))],
        [-3, new Uint8Array(Buffer.from(jwk.y!, "base64url"))],
      ]) as never,
    );
  }

  /** navigator.credentials.create, answered: "none" attestation, UP+UV (unless told otherwise). */
  register(options: PublicKeyCredentialCreationOptionsJSON, o: AnswerOptions = {}): RegistrationResponseJSON {
    const rpId = o.rpId ?? options.rp.id ?? TEST_RP_ID;
    const clientData = this.clientData("webauthn.create", options.challenge, o.origin ?? TEST_ORIGIN);
    const idLen = Buffer.alloc(2);
    idLen.writeUInt16BE(this.credentialId.length);
    const authData = Buffer.concat([
      this.authHead(rpId, (o.uv === false ? UP : UP | UV) | AT),
      Buffer.alloc(16), // aaguid
      idLen,
      this.credentialId,
      this.coseKey(),
    ]);
    const attestationObject = isoCBOR.encode(
      new Map<string, unknown>([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", new Uint8Array(authData)],
      ]) as never,
    );
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      response: {
        clientDataJSON: b64u(clientData),
        attestationObject: b64u(attestationObject),
        transports: ["internal"],
      },
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
    };
  }

  /** navigator.credentials.get, answered for `challenge` (base64url). */
  assert(challenge: string, o: AnswerOptions = {}): AuthenticationResponseJSON {
    const clientData = this.clientData(o.type ?? "webauthn.get", challenge, o.origin ?? TEST_ORIGIN);
    const authData = this.authHead(o.rpId ?? TEST_RP_ID, o.uv === false ? UP : UP | UV);
    const signature = sign(
      "sha256",
      Buffer.concat([authData, createHash("sha256").update(clientData).digest()]),
      this.privateKey,
    );
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      response: {
        clientDataJSON: b64u(clientData),
        authenticatorData: b64u(authData),
        signature: b64u(signature),
      },
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
    };
  }

  private clientData(type: string, challenge: string, origin: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }), "utf8");
  }

  /** rpIdHash || flags || counter (the counter goes up at every use, as a real authenticator's does) */
  private authHead(rpId: string, flags: number): Buffer {
    this.counter += 1;
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.counter);
    return Buffer.concat([createHash("sha256").update(rpId).digest(), Buffer.from([flags]), counter]);
  }
}
