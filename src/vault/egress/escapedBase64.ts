/**
 * The egress echo check's reading of base64 with any of its characters escaped, letters and
 * digits too (`\u0041`, `%41`, `&#65;`, `%26%2365%3B`): EscapedBase64, one of the spellings
 * echo.ts's spellingsOf makes, given each base64 form of a released value. The answer's escapes
 * that stand for base64 characters are read once, and the forms looked for in that reading.
 */

import { Base64Reading } from "./base64Reading.js";
import { ESCAPE_STARTS, LONGEST_CHAR, type Match, type Spelling, urlEscaped } from "./echoSpelling.js";

/** The least a pass's reading is extended by beyond the longest occurrence (then by as much as it holds). */
const WINDOW = 1024;

/**
 * The base64 forms of the released values (whole, and the characters a value alone determines
 * inside longer base64), with any of their characters escaped, letters and digits too (`\u0041`,
 * `%41`, `&#65;`, `%26%2365%3B`: an encoder that escapes more than it must, or an upstream that
 * hides an echo so), and any `fj` of them as the one name HTML defines for both (`&fjlig;`, as an
 * HTML reader decodes it; escaped again or URL-escaped too). The bytes are read once with every escape that stands for a base64 character
 * read (base64Escape; the longest reading at each place, every other byte as itself), and the
 * forms looked for in that reading by indexOf: one pass, however many forms. Looked for only in
 * bytes that hold an escape's first byte. A form in which a URL escape was read is replaced by
 * the placeholder's form with `+`, `/`, `=` URL-escaped as deep.
 */
export class EscapedBase64 implements Spelling {
  readonly longest: number;
  readonly needsOneOf = ESCAPE_STARTS;
  private readonly forms: { from: Buffer; to: string }[] = [];
  /** The bytes of answers read so far, all passes together (what test/vault/egress-echo-flood.test.ts counts). */
  bytesRead = 0;

  constructor() {
    this.longest = 0;
  }

  add(from: string, to: string): void {
    if (this.forms.some((f) => f.from.toString("latin1") === from)) return;
    this.forms.push({ from: Buffer.from(from, "latin1"), to });
    (this as { longest: number }).longest = Math.max(this.longest, LONGEST_CHAR * from.length);
  }

  get empty(): boolean {
    return this.forms.length === 0;
  }

  private placeholder(to: string, depth: number): Buffer {
    if (depth === 0) return Buffer.from(to, "latin1");
    let out = urlEscaped(true, /[+/=]/g)(to);
    for (let d = 1; d < depth; d++) out = out.replaceAll("%", "%25");
    return Buffer.from(out, "latin1");
  }

  /** The first occurrence from `from` that starts before `before`: one ask of a pass of its own. */
  first(buf: Buffer, from: number, before: number): Match | null {
    return this.pass(buf, before)(from);
  }

  /**
   * A search of one pass over `buf` (echo.ts's replaceUpTo, whose `from` only grows): one reading
   * (Base64Reading), extended as far as an ask needs, by at least as much as it holds (so a pass
   * reads on in few steps), and for each form where its next occurrence in the reading is, or how
   * far it is known to have none. Each byte is read once, and looked through about once per form,
   * however many echoes are asked for: a reading of its own at each ask, in a window that doubled
   * until it held one (5.5 KB at least for a 40-byte value), read an answer of 4,000 escaped
   * echoes 56 times over (test/vault/egress-echo-flood.test.ts).
   * The reading starts again only where a match another spelling gave ends inside an escape it
   * read (the reading from there differs).
   */
  pass(buf: Buffer, before: number): (from: number) => Match | null {
    const forms = this.forms;
    let r: Base64Reading | null = null;
    // per form: the reading index of its next occurrence (-1: none found yet), and the index
    // from which it has not been looked for
    const next = new Array<number>(forms.length);
    const searched = new Array<number>(forms.length);
    const restart = (from: number) => {
      r = new Base64Reading(buf, from);
      next.fill(-1);
      searched.fill(0);
      return r;
    };
    return (from) => {
      if (from >= buf.length || from >= before) return null;
      let reading: Base64Reading = r === null || from < r.start ? restart(from) : r;
      if (reading.readTo < from) this.bytesRead += reading.extend(from);
      let i0 = reading.indexOf(from);
      if (i0 < 0) {
        reading = restart(from);
        i0 = 0;
      }
      for (;;) {
        const view = reading.view();
        let best = -1;
        let bestForm = -1;
        // the lowest index where a form not found may still occur
        let open = reading.done ? Number.POSITIVE_INFINITY : view.length;
        for (let f = 0; f < forms.length; f++) {
          const form = forms[f]!.from;
          if (next[f]! < i0) {
            const i = view.indexOf(form, Math.max(i0, searched[f]!));
            next[f] = i;
            searched[f] = i >= 0 ? i : Math.max(i0, view.length - form.length + 1);
          }
          const i = next[f]!;
          if (i < 0) {
            if (!reading.done) open = Math.min(open, searched[f]!);
            continue;
          }
          if (best < 0 || i < best || (i === best && form.length > forms[bestForm]!.from.length)) {
            best = i;
            bestForm = f;
          }
        }
        if (best >= 0 && best < open) {
          if (reading.startOf(best) >= before) return null;
          const last = best + forms[bestForm]!.from.length - 1;
          const to = this.placeholder(forms[bestForm]!.to, reading.depthOf(best, last));
          // a form that starts at the `j` of `&fjlig;` (or ends at its `f`) replaces the escape
          // whole: its other character is written again beside the placeholder, as itself
          const head = reading.before(best);
          const tail = reading.after(last);
          return {
            at: reading.startOf(best),
            end: reading.endOf(last),
            to: head.length === 0 && tail.length === 0 ? to : Buffer.concat([head, to, tail]),
          };
        }
        if (reading.done || reading.startOf(open) >= before) return null;
        const grow = Math.max(WINDOW + this.longest, reading.readTo - reading.start);
        this.bytesRead += reading.extend(reading.readTo + grow);
      }
    };
  }

  unfinished(buf: Buffer, from: number, before: number, work: { left: number }): number {
    const start = Math.max(from, buf.length - this.longest + 1);
    if (start >= before) return -1;
    work.left -= buf.length - start;
    if (work.left < 0) return from;
    const r = new Base64Reading(buf, start);
    this.bytesRead += r.extend(buf.length);
    // (read as written to the end, the forms' Literal spellings keep what they may start)
    if (!r.decoded && r.cut < 0) return -1;
    // the reading to where an escape the end may cut begins: an occurrence may go on there
    const view = r.view();
    const whole = r.cut < 0 ? view.length : r.cut;
    let earliest = r.cut < 0 ? -1 : r.startOf(r.cut);
    for (const f of this.forms) {
      for (let i = Math.max(0, whole - f.from.length + 1); i < whole; i++) {
        const at = r.startOf(i);
        if (at >= before || (earliest >= 0 && at >= earliest)) break;
        work.left -= whole - i;
        if (work.left < 0) return from;
        if (f.from.compare(view, i, whole, 0, whole - i) === 0) {
          earliest = at;
          break;
        }
      }
    }
    return earliest >= 0 && earliest < before ? earliest : -1;
  }
}
