// docs/audit-format.md lists the event types and, in a table, the fields each is read for: both
// kept in step with src/audit/events.ts, which decides what the log accepts (a type added there and
// not described, or described and gone, fails here); docs/design.md's Audit log names them all too.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AUDIT_EVENT_TYPES } from "../../src/audit/events.js";
import { REPO } from "./helpers.js";

const doc = readFileSync(join(REPO, "docs", "audit-format.md"), "utf8");
const section = doc.slice(
  doc.indexOf("## Event fields"),
  doc.indexOf("\n## ", doc.indexOf("## Event fields") + 5),
);

describe("docs/audit-format.md, Event fields", () => {
  it("lists exactly the event types the log accepts", () => {
    const list = section.slice(
      section.indexOf("from this list:"),
      section.indexOf("A call (or guarded read)"),
    );
    const named = new Set([...list.matchAll(/`([a-z]+(?:_[a-z]+)*)`/g)].map((m) => m[1]!));
    const types = new Set<string>(AUDIT_EVENT_TYPES);
    expect([...types].filter((t) => !named.has(t))).toEqual([]);
    // the list also names request methods (`resources/read`…) and fields; none of those is a type
    expect([...named].filter((n) => !types.has(n) && /^[a-z]+_[a-z_]+$/.test(n))).toEqual([]);
  });

  it("gives the fields of every type a gateway or a command writes, in the table", () => {
    const rows = section.split("\n").filter((l) => l.startsWith("| `"));
    const readFrom = rows.map((r) => r.split("|").at(-2) ?? "").join(" ");
    const described = new Set([...readFrom.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!));
    // request_forwarded is described in the list itself, with its fields
    expect(AUDIT_EVENT_TYPES.filter((t) => !described.has(t) && t !== "request_forwarded")).toEqual([]);
  });
});

describe("docs/design.md, Audit log", () => {
  // design.md gives the event types in a paragraph of its own: a type added to the log and left
  // out there (passphrase_changed and keys_rotated were) fails here.
  it("names every event type the log accepts", () => {
    const design = readFileSync(join(REPO, "docs", "design.md"), "utf8");
    const start = design.indexOf("## Audit log");
    const audit = design.slice(start, design.indexOf("\n## ", start + 5));
    const list = audit.slice(audit.indexOf("Event types"), audit.indexOf("*Departure:*"));
    const named = new Set([...list.matchAll(/`([a-z]+(?:_[a-z]+)*)`/g)].map((m) => m[1]!));
    expect(AUDIT_EVENT_TYPES.filter((t) => !named.has(t))).toEqual([]);
  });
});
