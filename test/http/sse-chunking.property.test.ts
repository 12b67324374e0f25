// The SSE reader a `run --url` gateway reads a server's streams with (src/supervisor/sse.ts):
// fast-check looks for a valid event stream (any line ends, comments, ids, multi-line data,
// text outside the BMP, events over the limit) and a way of cutting its bytes into chunks
// (through a \r\n, through a character's UTF-8 bytes) for which the reader sees other events
// than when it is given the stream whole, or other events than the ones written. And the work
// it does for one long line grows with the line, not with its square: a large answer sent as
// one event must not stall the gateway for everyone else.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type SseEvent, SseReader } from "../../src/supervisor/sse.js";

interface Written {
  comments: string[];
  event: string | null;
  id: string | null;
  data: string[];
}

/** Field text: any characters (astral ones too) but line ends and NUL. */
const text = (maxLength: number) =>
  fc
    .string({ unit: "binary", maxLength })
    // what survives UTF-8 (a lone surrogate does not), without line ends
    .map((s) =>
      Buffer.from(s, "utf8")
        .toString("utf8")
        .replace(/[\r\n\0]/g, "."),
    )
    .filter((s) => !s.startsWith(" ")); // a leading space is the separator's, not the value's

const written: fc.Arbitrary<Written> = fc.record({
  comments: fc.array(text(6), { maxLength: 2 }),
  event: fc.option(text(5).filter((s) => s !== "")),
  id: fc.option(text(5)),
  data: fc.array(text(40), { minLength: 1, maxLength: 3 }),
});

const lineEnd = fc.constantFrom("\n", "\r\n", "\r");

/** The stream's text: each field on its own line, each line ended by one of the three line ends. */
function serialise(events: Written[], ends: string[]): string {
  let i = 0;
  let out = "";
  const line = (text: string) => {
    let end = ends[i++ % ends.length]!;
    // after a \r, an empty line ended by \n would read as one \r\n: it gets a \r of its own
    if (text === "" && out.endsWith("\r") && end.startsWith("\n")) end = "\r";
    out += text + end;
  };
  for (const e of events) {
    for (const c of e.comments) line(`:${c}`);
    if (e.event !== null) line(`event: ${e.event}`);
    if (e.id !== null) line(`id: ${e.id}`);
    for (const d of e.data) line(`data: ${d}`);
    line("");
  }
  return out;
}

/** What the standard says a reader dispatches for these events, with a data limit of `max`. */
function expected(events: Written[], max: number): { events: SseEvent[]; oversize: number } {
  const out: SseEvent[] = [];
  let oversize = 0;
  let id: string | null = null;
  for (const e of events) {
    if (e.id !== null) id = e.id;
    const data = e.data.join("\n");
    if (data.length > max) oversize++;
    else if (data !== "") out.push({ event: e.event ?? "message", data, id });
  }
  return { events: out, oversize };
}

function read(chunks: Buffer[], max: number) {
  const events: SseEvent[] = [];
  const oversize: number[] = [];
  const r = new SseReader(
    (e) => events.push(e),
    (n) => oversize.push(n),
    max,
  );
  for (const c of chunks) r.push(c);
  r.end();
  return { events, oversize };
}

/** `bytes` cut at the given offsets (any order, repeats allowed: empty chunks too). */
function cut(bytes: Buffer, at: number[]): Buffer[] {
  const points = [...new Set(at.map((a) => a % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    chunks.push(bytes.subarray(from, p));
    from = p;
  }
  chunks.push(bytes.subarray(from));
  return chunks;
}

describe("SseReader, chunked", () => {
  it("any cutting of a valid stream gives the events of the stream whole, which are the ones written", () => {
    fc.assert(
      fc.property(
        fc.array(written, { minLength: 1, maxLength: 6 }),
        fc.array(lineEnd, { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        fc.constantFrom(30, 100, 1000),
        (events, ends, at, max) => {
          const bytes = Buffer.from(serialise(events, ends), "utf8");
          const whole = read([bytes], max);
          const want = expected(events, max);
          expect(whole.events).toEqual(want.events);
          expect(whole.oversize).toHaveLength(want.oversize);
          expect(read(cut(bytes, at), max)).toEqual(whole);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("one byte at a time gives the same events as the stream whole", () => {
    fc.assert(
      fc.property(
        fc.array(written, { minLength: 1, maxLength: 4 }),
        fc.array(lineEnd, { minLength: 1, maxLength: 4 }),
        (events, ends) => {
          const bytes = Buffer.from(serialise(events, ends), "utf8");
          const bytewise = [...bytes].map((b) => Buffer.from([b]));
          expect(read(bytewise, 1000)).toEqual(read([bytes], 1000));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a line longer than the limit, cut anywhere, is one oversize report, and what follows is read", () => {
    fc.assert(
      fc.property(fc.integer({ min: 101, max: 3000 }), fc.array(fc.nat(), { maxLength: 30 }), (n, at) => {
        const bytes = Buffer.from(`data: ${"x".repeat(n)}\r\n\r\ndata: after\n\n`, "utf8");
        const got = read(cut(bytes, at), 100);
        expect(got.oversize).toHaveLength(1);
        expect(got.events.map((e) => e.data)).toEqual(["after"]);
      }),
    );
  });
});

describe("SseReader, work per byte", () => {
  /**
   * Counts the characters handed to RegExp.prototype.exec (from lastIndex on) while `f` runs: a
   * measure of the scanning work that does not depend on the machine's speed.
   */
  function scanned(f: () => void): number {
    const exec = RegExp.prototype.exec;
    let n = 0;
    RegExp.prototype.exec = function (this: RegExp, s: string) {
      n += s.length - (this.global || this.sticky ? this.lastIndex : 0);
      return exec.call(this, s);
    };
    try {
      f();
    } finally {
      RegExp.prototype.exec = exec;
    }
    return n;
  }

  it("one 8 MiB data line in 16 KiB chunks is scanned a small constant number of times over", () => {
    const chunk = Buffer.alloc(16 * 1024, "a");
    const total = 8 * 1024 * 1024;
    const events: SseEvent[] = [];
    const work = scanned(() => {
      const r = new SseReader(
        (e) => events.push(e),
        () => {},
        64 * 1024 * 1024,
      );
      r.push(Buffer.from("data: "));
      for (let sent = 0; sent < total; sent += chunk.length) r.push(chunk);
      r.push(Buffer.from("\n\n"));
      r.end();
    });
    expect(events).toHaveLength(1);
    expect(events[0]!.data.length).toBe(total);
    // appending to one buffer and scanning it again on each chunk would be ~256 MiB (total²/2/chunk)
    expect(work).toBeLessThan(4 * total);
  });

  it("an endless line over the limit is counted, not kept or scanned again", () => {
    const chunk = Buffer.alloc(16 * 1024, "b");
    const total = 8 * 1024 * 1024;
    const over: number[] = [];
    const work = scanned(() => {
      const r = new SseReader(
        () => {},
        (n) => over.push(n),
        1024 * 1024,
      );
      r.push(Buffer.from("data: "));
      for (let sent = 0; sent < total; sent += chunk.length) r.push(chunk);
      r.push(Buffer.from("\n\ndata: next\n\n"));
      r.end();
    });
    expect(over).toEqual([total + "data: ".length]);
    expect(work).toBeLessThan(4 * total);
  });
});
