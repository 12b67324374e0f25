import canonicalize from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AUDIT_EVENT_TYPES,
  AuditEventError,
  argumentsDigest,
  assertAuditable,
} from "../../src/audit/events.js";
import {
  type AuditHeader,
  encodeHeader,
  parseExportLine,
  parseHeader,
  recordBytes,
  splitRecord,
} from "../../src/audit/record.js";

const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n }).map((b) => Buffer.from(b));
const hexOf = (n: number) => bytes(n).map((b) => b.toString("hex"));
const ulid = fc
  .tuple(
    fc.constantFrom(..."01234567"),
    fc.string({ unit: fc.constantFrom(..."0123456789ABCDEFGHJKMNPQRSTVWXYZ"), minLength: 25, maxLength: 25 }),
  )
  .map(([a, b]) => a + b);
const header: fc.Arbitrary<AuditHeader> = fc.record({
  v: fc.constant(1 as const),
  seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  prev: hexOf(32),
  time: fc
    .date({
      min: new Date("2000-01-01T00:00:00Z"),
      max: new Date("2999-12-31T23:59:59Z"),
      noInvalidDate: true,
    })
    .map((d) => d.toISOString()),
  type: fc.constantFrom(...AUDIT_EVENT_TYPES),
  writer: ulid,
  pid: fc.integer({ min: 1, max: 4_194_304 }),
  key: hexOf(16),
  epk: bytes(32).map((b) => b.toString("base64url")),
  nonce: bytes(12).map((b) => b.toString("base64url")),
});

describe("record header", () => {
  it("is the RFC 8785 canonical form, and parses back to itself", () => {
    fc.assert(
      fc.property(header, (h) => {
        const text = encodeHeader(h);
        expect(text).toBe(canonicalize(h));
        expect(parseHeader(text)).toEqual(h);
        expect(text).not.toContain("\n");
      }),
    );
  });

  it("has one spelling only", () => {
    const h = fc.sample(header, { numRuns: 1, seed: 7 })[0]!;
    const text = encodeHeader(h);
    const variants = [
      text.replace('"v":1', '"v":1.0'),
      text.replace(`"seq":${h.seq}`, `"seq":0${h.seq}`),
      text.replace(`"pid":${h.pid}`, `"pid": ${h.pid}`),
      text.replace(`"prev":"${h.prev}"`, `"prev":"${h.prev.toUpperCase().replace(/^./, "A")}"`),
      text.replace("}", ',"extra":1}'),
      `{"key":"${h.key}",${text.slice(1).replace(`"key":"${h.key}",`, "")}`,
      `${text} `,
      text.replace('"type":"', '"type":"\\u0074'),
      text.replace(`"time":"${h.time}"`, `"time":"${h.time.replace("Z", "+00:00")}"`),
    ];
    for (const v of variants) if (v !== text) expect(parseHeader(v), v).toBeNull();
    expect(() => encodeHeader({ ...h, type: "Tool Called" })).toThrow(/out of format/);
    expect(() => encodeHeader({ ...h, seq: 2 ** 60 })).toThrow(/out of format/);
  });

  it("is separated from the sealed bytes by its only 0x0A", () => {
    const h = fc.sample(header, { numRuns: 1, seed: 3 })[0]!;
    const sealed = Buffer.from([10, 10, 0, 255]);
    const parts = splitRecord(recordBytes(encodeHeader(h), sealed))!;
    expect(parts.header).toBe(encodeHeader(h));
    expect(parts.sealed).toEqual(sealed);
  });
});

describe("export line", () => {
  const h = fc.sample(header, { numRuns: 1, seed: 11 })[0]!;
  const line = (sealed: string) =>
    `{"hash":"${"a".repeat(64)}","header":${encodeHeader(h)},"sealed":"${sealed}"}`;

  it("accepts canonical base64url only", () => {
    for (let n = 0; n < 8; n++) {
      const b = Buffer.alloc(n, 0xa5);
      expect(typeof parseExportLine(line(b.toString("base64url")))).toBe("object");
    }
    expect(parseExportLine(line("QQ"))).not.toBeTypeOf("string"); // 0x41
    expect(parseExportLine(line("QR"))).toMatch(/canonical base64url/); // same byte, stray bits
    expect(parseExportLine(line("QUI"))).not.toBeTypeOf("string");
    expect(parseExportLine(line("QUJ"))).toMatch(/canonical base64url/);
    expect(parseExportLine(line("QUJDR"))).toMatch(/canonical base64url/); // a lone sixth-bit character
    expect(parseExportLine(line("QUJD="))).toMatch(/not a canonical export record/);
    expect(B64URL).toHaveLength(64);
  });

  it("accepts the JCS spelling only", () => {
    const good = line("AAAA");
    expect(parseExportLine(good)).not.toBeTypeOf("string");
    expect(parseExportLine(good.replace('{"hash"', '{ "hash"'))).toBeTypeOf("string");
    expect(parseExportLine(`${good}\r`)).toBeTypeOf("string");
    expect(parseExportLine(good.replace('"sealed":"AAAA"}', '"sealed":"AAAA","x":1}'))).toBeTypeOf("string");
  });
});

describe("events", () => {
  it("refuses unknown types and non-JSON values", () => {
    expect(() => assertAuditable({ type: "tool_calld" })).toThrow(AuditEventError);
    expect(() => assertAuditable(null)).toThrow(AuditEventError);
    expect(() => assertAuditable({ type: "tool_called", n: Number.NaN })).toThrow(/finite/);
    expect(() => assertAuditable({ type: "tool_called", f: () => 1 })).toThrow(/function/);
    expect(() => assertAuditable({ type: "tool_called", b: 1n })).toThrow(/bigint/);
    const loop: Record<string, unknown> = { type: "tool_called" };
    loop.self = loop;
    expect(() => assertAuditable(loop)).toThrow(/itself/);
    expect(() => assertAuditable({ type: "tool_called", same: [1], again: [1] })).not.toThrow();
  });

  it("refuses a string under a key named like a secret, at any depth", () => {
    for (const key of [
      "secret",
      "clientSecret",
      "password",
      "PASSPHRASE",
      "token",
      "accessToken",
      "apiKey",
      "api_key",
      "X-API-KEY",
      "credentialValue",
    ]) {
      expect(() => assertAuditable({ type: "credential_injected", [key]: "s3cr3t" }), key).toThrow(
        /never written/,
      );
      expect(() => assertAuditable({ type: "tool_called", a: [{ b: { [key]: "s3cr3t" } }] }), key).toThrow(
        /a\[0\]\.b\./,
      );
    }
    // Names, scopes, counts and digests are fine.
    expect(() =>
      assertAuditable({
        type: "credential_injected",
        scope: "inventory-api-staging",
        credentialScope: ["x"],
        tokenCount: 12,
        token: null,
      }),
    ).not.toThrow();
  });

  it("digests arguments as sha256 of their canonical JSON", () => {
    expect(argumentsDigest({ b: 1, a: "x" })).toBe(argumentsDigest({ a: "x", b: 1 }));
    expect(argumentsDigest({ a: 1 })).toBe(
      "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862",
    );
    expect(argumentsDigest(undefined)).toBe(argumentsDigest(null));
    expect(argumentsDigest({ password: "hunter2" })).not.toContain("hunter2");
  });
});
