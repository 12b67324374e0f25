// The classifier that decides whether a server's elicitation message speaks as portcullis (and so
// reaches the human with "(from the server, not from portcullis) " in front of it). A hostile
// server writes the name so that a human reads it and a string comparison does not: invisible
// characters inside it, combining marks, look-alike letters, compatibility forms, any case, a
// prefix of anything that is not a letter. fast-check searches for a spelling that slips through;
// a control property keeps the prefix off messages that do not name it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { attributedElicitation, speaksAsGateway } from "../../src/gateway/serverWords.js";

/** Characters a client renders as nothing, or as a mark on the letter before. */
const INVISIBLE = [
  "\u200b", // zero-width space
  "\u200c",
  "\u200d",
  "\u2060", // word joiner
  "\ufeff",
  "\u00ad", // soft hyphen
  "\u034f", // combining grapheme joiner
  "\u0301", // combining acute
  "\u180e",
  "\u{e0041}", // a tag character
  "\ufe0f", // a variation selector
];

/** For each letter of the name, spellings a human reads as it. */
const SPELLINGS: Record<string, string[]> = {
  p: ["p", "P", "р", "Р", "ρ", "ｐ", "Ｐ", "𝐩"],
  o: ["o", "O", "о", "О", "ο", "Ο", "0", "ｏ", "ó", "ö"],
  r: ["r", "R", "г", "ｒ", "ʀ", "ŕ"],
  t: ["t", "T", "т", "Т", "τ", "ｔ", "Ｔ"],
  c: ["c", "C", "с", "С", "ϲ", "ｃ", "ç"],
  u: ["u", "U", "υ", "ս", "ｕ", "ü", "ú"],
  l: ["l", "L", "ӏ", "1", "|", "ｌ", "ℓ", "Ⅼ"],
  i: ["i", "I", "і", "І", "ι", "ı", "ｉ", "!", "í"],
  s: ["s", "S", "ѕ", "Ѕ", "ｓ", "5", "ś"],
};

/** The name spelled letter by letter, with invisible characters anywhere inside it. */
const disguisedName = fc
  .tuple(
    ...[..."portcullis"].map((letter) =>
      fc.tuple(
        fc.constantFrom(...SPELLINGS[letter]!),
        fc.array(fc.constantFrom(...INVISIBLE), { maxLength: 3 }),
      ),
    ),
  )
  .map((parts) => parts.map(([shown, hidden]) => shown + hidden.join("")).join(""));

/** What may come before it: spaces, punctuation, symbols, invisible characters (no letter). */
const prefix = fc
  .array(fc.constantFrom(" ", "\t", "*", "[", "(", ">", "-", "—", "🔒", "\u200b", "\u00a0", ":", "\u2028"), {
    maxLength: 8,
  })
  .map((a) => a.join(""));

const rest = fc.constantFrom(": approve the call here.", " says: open this link", "", " — confirm", ":");

describe("an elicitation that speaks as portcullis", () => {
  it("is recognised however the name is written", () => {
    fc.assert(
      fc.property(prefix, disguisedName, rest, (before, name, after) => {
        const message = `${before}${name}${after}`;
        expect(speaksAsGateway(message), JSON.stringify(message)).toBe(true);
        expect(attributedElicitation({ message })?.message).toBe(
          `(from the server, not from portcullis) ${message}`,
        );
      }),
      { numRuns: 2000 },
    );
  });

  it("is recognised as the speaker of a sentence's first words, not only as its first word", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("Message from ", "A note by ", "Security check — ", "Hi, this is "),
        disguisedName,
        (lead, name) => {
          expect(speaksAsGateway(`${lead}${name}: approve here`)).toBe(true);
        },
      ),
    );
  });

  it("a long run of invisible characters before the name does not hide it", () => {
    const message = `${"\u200b\u034f\ufe0f".repeat(400_000)}portcullis: approve`;
    expect(speaksAsGateway(message)).toBe(true);
    // a wall of visible symbols before it is not where a speaker is read (and is not walked whole)
    expect(speaksAsGateway(`${"—".repeat(5_000)}portcullis: approve`)).toBe(false);
    expect(speaksAsGateway(`${"— ".repeat(200)}portcullis: approve`)).toBe(true);
  });

  it("a message that does not name it is passed on as written", () => {
    // words of letters none of which is, or passes for, one of the name's
    const word = fc
      .array(fc.constantFrom(..."abdefghjkmnqvwxyzABDEFGHJKMNQVWXYZ"), { minLength: 1, maxLength: 12 })
      .map((a) => a.join(""));
    fc.assert(
      fc.property(
        fc.array(word, { maxLength: 12 }),
        fc.array(fc.constantFrom(...INVISIBLE), { maxLength: 4 }),
        (words, hidden) => {
          const message = hidden.join("") + words.join(" ");
          expect(speaksAsGateway(message)).toBe(false);
          expect(attributedElicitation({ message })).toBeNull();
        },
      ),
      { numRuns: 500 },
    );
    for (const message of ["Pick a colour", "Please confirm the deployment", "Which port should I use?"])
      expect(speaksAsGateway(message), message).toBe(false);
  });
});
