import { closeSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import canonicalize from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AUDIT_EVENT_TYPES,
  AuditEventError,
  argumentsDigest,
  assertAuditable,
} from "../../src/audit/events.js";
import { ExportLineTooLongError, exportLines } from "../../src/audit/exportFile.js";
import {
  type AuditHeader,
  chainFields,
  encodeHeader,
  HeaderWriter,
  parseExportLine,
  parseHeader,
  recordBytes,
  splitRecord,
} from "../../src/audit/record.js";
import { REPO, tempDir } from "./helpers.js";

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

// The format, as docs/audit-format.md writes it; the byte reader (src/audit/header.ts) must
// accept the same strings, mutated in every way below, and find the same seq and prev.
const SPEC = new RegExp(
  "^\\{" +
    '"epk":"[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]",' +
    '"key":"[0-9a-f]{32}",' +
    '"nonce":"[A-Za-z0-9_-]{16}",' +
    '"pid":[1-9][0-9]{0,9},' +
    '"prev":"([0-9a-f]{64})",' +
    '"seq":([1-9][0-9]{0,15}),' +
    '"time":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z",' +
    '"type":"[a-z][a-z_]{0,63}",' +
    '"v":1,' +
    '"writer":"[0-7][0-9A-HJKMNP-TV-Z]{25}"' +
    "\\}$",
);

describe("record header", () => {
  it("is checked against the very expression docs/audit-format.md gives", () => {
    // SPEC is written out here to capture prev and seq; without its groups it must be the
    // document's expression character for character, so the two cannot drift apart
    const doc = readFileSync(join(REPO, "docs", "audit-format.md"), "utf8");
    const m = /As a regular expression \(keys in JCS order\):\n\n```\n([\s\S]*?)\n```/.exec(doc);
    expect(m, "docs/audit-format.md gives the header's expression").not.toBeNull();
    expect(SPEC.source.replace(/[()]/g, "")).toBe(m![1]!.replace(/\n/g, ""));
  });

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

  it("is written by a session's HeaderWriter byte for byte as encodeHeader and canonicalize write it", () => {
    fc.assert(
      fc.property(header, (h) => {
        const w = new HeaderWriter(h);
        const text = w.text(h.seq, h.prev, h.time, h.type, h.nonce);
        expect(text).toBe(encodeHeader(h));
        expect(text).toBe(canonicalize(h));
      }),
    );
  });

  it("is refused by a HeaderWriter exactly when encodeHeader refuses it", () => {
    // each field replaced, now and then, by a string near its alphabet (or a number out of range)
    const near = fc.string({ unit: fc.constantFrom(...'aZ09_-:.TZé\n"{ '), minLength: 0, maxLength: 70 });
    const bent = fc.record({
      prev: fc.option(near, { freq: 3 }),
      time: fc.option(near, { freq: 3 }),
      type: fc.option(near, { freq: 3 }),
      nonce: fc.option(near, { freq: 3 }),
      seq: fc.option(fc.constantFrom(0, -1, 1.5, 2 ** 53, Number.NaN), { freq: 3 }),
    });
    fc.assert(
      fc.property(header, bent, (h, b) => {
        const v: AuditHeader = { ...h };
        for (const k of ["prev", "time", "type", "nonce", "seq"] as const) {
          if (b[k] !== null) (v as unknown as Record<string, unknown>)[k] = b[k];
        }
        let expected: string | Error;
        try {
          expected = encodeHeader(v);
        } catch (e) {
          expected = e as Error;
        }
        const write = () => new HeaderWriter(h).text(v.seq, v.prev, v.time, v.type, v.nonce);
        if (expected instanceof Error) expect(write).toThrow(/out of format/);
        else expect(write()).toBe(expected);
      }),
    );
    const h = fc.sample(header, { numRuns: 1, seed: 3 })[0]!;
    expect(() => new HeaderWriter({ ...h, writer: "not a ulid" })).toThrow(/out of format/);
    expect(() => new HeaderWriter({ ...h, pid: 0 })).toThrow(/out of format/);
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

  it("is read byte by byte exactly as the format's regular expression reads it", () => {
    const alphabet = `${B64URL}"{},:.Z0\n\u00e9\u0130 `;
    const mutation = fc.tuple(
      fc.constantFrom("replace", "delete", "insert", "repeat"),
      fc.nat(),
      fc.constantFrom(...alphabet),
      fc.integer({ min: 1, max: 70 }),
    );
    fc.assert(
      fc.property(header, fc.array(mutation, { maxLength: 2 }), (h, mutations) => {
        let text = encodeHeader(h);
        for (const [how, at, ch, n] of mutations) {
          const i = at % (text.length + 1);
          if (how === "replace") text = text.slice(0, i) + ch + text.slice(i + 1);
          if (how === "delete") text = text.slice(0, i) + text.slice(i + n);
          if (how === "insert") text = text.slice(0, i) + ch.repeat(n) + text.slice(i);
          if (how === "repeat") text = text.slice(0, i) + text.slice(i, i + n) + text.slice(i);
        }
        const m = SPEC.exec(text);
        const accepted = m !== null && Number.isSafeInteger(Number(m[2]));
        const parsed = parseHeader(text);
        expect(parsed !== null, text).toBe(accepted);
        if (parsed) expect([parsed.prev, parsed.seq]).toEqual([m?.[1], Number(m?.[2])]);
        // In a record, the same bytes followed by 0x0A and anything at all.
        const record = Buffer.concat([Buffer.from(text, "utf8"), Buffer.from([0x0a, 0x0a, 0x7b])]);
        const inRecord = SPEC.exec(text.split("\n")[0] as string);
        const fields = chainFields(record);
        expect(fields !== null, text).toBe(inRecord !== null && Number.isSafeInteger(Number(inRecord[2])));
        if (fields) expect(fields.seqValue).toBe(Number(inRecord?.[2]));
      }),
      { numRuns: 3000 },
    );
  });

  it("is read byte by byte exactly as the format's regular expression reads it, under every single edit", () => {
    // Every one-character replacement, insertion and deletion of headers at the edges of the
    // format (longest pid, seq and type; shortest ones), over printable ASCII and a few others.
    const base = fc.sample(header, { numRuns: 1, seed: 5 })[0]!;
    const edges: AuditHeader[] = [
      { ...base, pid: 9_999_999_999, seq: 1_000_000_000_000_000, type: `a${"_".repeat(63)}` },
      { ...base, pid: 1, seq: 9, type: "z" },
    ];
    const probes = [
      ...Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)),
      "\n",
      "\u00e9",
      "\u0130",
    ];
    let accepted = 0;
    // Disagreements are collected and compared once: an expect per variant (about 120,000 of
    // them) cost three quarters of the test's CPU, and on a loaded machine it ran past the timeout.
    const disagreements: { variant: string; read: "as text" | "in a record"; spec: boolean }[] = [];
    for (const h of edges) {
      const text = encodeHeader(h);
      const variants: string[] = [];
      for (let i = 0; i <= text.length; i++) {
        if (i < text.length) variants.push(text.slice(0, i) + text.slice(i + 1));
        for (const c of probes) {
          variants.push(text.slice(0, i) + c + text.slice(i));
          if (i < text.length) variants.push(text.slice(0, i) + c + text.slice(i + 1));
        }
      }
      for (const v of variants) {
        const m = SPEC.exec(v);
        const ok = m !== null && Number.isSafeInteger(Number(m[2]));
        if (ok) accepted++;
        if ((parseHeader(v) !== null) !== ok) disagreements.push({ variant: v, read: "as text", spec: ok });
        // As a record, the header is what comes before the first 0x0A.
        const record = Buffer.concat([Buffer.from(v, "utf8"), Buffer.from([0x0a, 0x00])]);
        const inRecord = SPEC.exec(v.split("\n")[0] as string);
        const okInRecord = inRecord !== null && Number.isSafeInteger(Number(inRecord[2]));
        if ((chainFields(record) !== null) !== okInRecord)
          disagreements.push({ variant: v, read: "in a record", spec: okInRecord });
      }
    }
    expect(disagreements).toEqual([]);
    expect(accepted).toBeGreaterThan(1000); // same-class replacements keep a header valid
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
    expect(parseExportLine(line("QUJD="))).toMatch(/canonical base64url/); // padding
    expect(parseExportLine(line("QUJDQUJD"))).not.toBeTypeOf("string");
    for (const odd of [
      "QUJD+UJD",
      "QUJD/UJD",
      "QUJDQ JD",
      "QUJDQ=JD",
      "QUJDQ\u00e9JD",
      "QUJDQ\u0100JD",
      "QU!DQUJD",
    ])
      expect(parseExportLine(line(odd)), odd).toMatch(/canonical base64url/);
    expect(B64URL).toHaveLength(64);
  });

  it("accepts the JCS spelling only", () => {
    const good = line("AAAA");
    expect(parseExportLine(good)).not.toBeTypeOf("string");
    expect(parseExportLine(good.replace('{"hash"', '{ "hash"'))).toBeTypeOf("string");
    expect(parseExportLine(`${good}\r`)).toBeTypeOf("string");
    expect(parseExportLine(good.replace('"sealed":"AAAA"}', '"sealed":"AAAA","x":1}'))).toBeTypeOf("string");
    expect(parseExportLine(good.replace('"sealed":"AAAA"}', '"sealed":""}'))).not.toBeTypeOf("string");
    expect(parseExportLine(good.replace('"sealed":"AAAA"}', '"sealed":"}'))).toMatch(
      /not a canonical export record/,
    );
    expect(parseExportLine(good.replace('"sealed":"AAAA"}', '"sealed":"AAAA"} '))).toMatch(/not a canonical/);
    expect(parseExportLine(good.replace('{"hash":"', '{"hash":"A').slice(0, -1))).toMatch(/not a canonical/);
    expect(parseExportLine(good.replace('","header":{', '","header": {'))).toMatch(/not a canonical/);
    expect(parseExportLine(good.replace('"v":1,', '"v":{1},'))).toMatch(/not a canonical/);
    // A character whose low byte is the one it replaces (U+0130 for "0") is not that byte.
    const at = good.indexOf("0", good.indexOf('"time":"'));
    const wide = `${good.slice(0, at)}\u0130${good.slice(at + 1)}`;
    expect(parseExportLine(wide)).toMatch(/not a canonical export record/);
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

describe("export file lines", () => {
  it("are cut from the bytes exactly as splitting the latin1 text, whatever the block size", () => {
    const dir = tempDir();
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: "binary", maxLength: 5 })), {
          maxLength: 8,
        }),
        fc.boolean(),
        fc.integer({ min: 1, max: 16 }),
        (lines, finalNewline, block) => {
          const file = join(dir, "export.jsonl");
          writeFileSync(file, Buffer.from(lines.join("\n") + (finalNewline ? "\n" : ""), "utf8"));
          const fd = openSync(file, "r");
          try {
            expect([...exportLines(fd, block)]).toEqual(readFileSync(file, "latin1").split("\n"));
          } finally {
            closeSync(fd);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a line longer than the limit throws once that much is read, naming the line; one at the limit is read", () => {
    const file = join(tempDir(), "export.jsonl");
    writeFileSync(file, `ab\n${"x".repeat(40)}\n${"y".repeat(41)}\nnever read\n`);
    const fd = openSync(file, "r");
    try {
      const read: string[] = [];
      expect(() => {
        for (const l of exportLines(fd, 7, 40)) read.push(l);
      }).toThrow(new ExportLineTooLongError(3, 40));
      expect(read).toEqual(["ab", "x".repeat(40)]);
    } finally {
      closeSync(fd);
    }
  });
});
