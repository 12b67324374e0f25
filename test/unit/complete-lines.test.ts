// test/helpers/completeLines.ts on a real pipe: a child writes one JSON line in two writes, the
// first ending right after a nested `}` and inside a character of two bytes, and writes the rest
// only when told. Between the two, what was read is no line yet: parsed, it throws ("Expected ','
// or '}'", the failure a loaded CI machine showed when a test parsed a watch's stdout mid-write).
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { completeJsonLines, completeLines, wholeLines } from "../helpers/completeLines.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { NODE } from "../helpers/paths.js";

// "é" is 0xC3 0xA9: the first write ends after 0xC3
const WRITER = `
const line = Buffer.from('{"seen":{"n":1},"at":"é"}\\n');
const cut = line.indexOf(0xa9);
process.stdout.write(line.subarray(0, cut));
process.stdin.once("data", () => {
  process.stdout.write(line.subarray(cut));
  process.stdin.pause();
});
`;

describe("completeLines", () => {
  it("leaves out a line a pipe handed over in part, and takes it once its newline came", async () => {
    const child = spawn(NODE, ["-e", WRITER], { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8");
    const ended = exitWithOutput(child, [child.stdout]);
    const firstPart = new Promise<void>((resolve) =>
      child.stdout.on("data", (s: string) => {
        out += s;
        resolve();
      }),
    );
    await firstPart;
    // the first write, read whole: a nested object closed, the two-byte character not yet decoded
    expect(out).toBe('{"seen":{"n":1},"at":"');
    expect(() => out.split("\n").map((l) => JSON.parse(l))).toThrow();
    expect(completeLines(out)).toEqual([]);
    expect(wholeLines(out)).toBe("");
    expect(completeJsonLines(out)).toEqual([]);

    child.stdin.end("go\n");
    expect(await ended).toEqual({ code: 0, signal: null });
    expect(completeJsonLines(out)).toEqual([{ seen: { n: 1 }, at: "é" }]);
  });

  it("keeps blank lines as lines, and a text without a newline has none", () => {
    expect(completeLines("a\n\nb\nc")).toEqual(["a", "", "b"]);
    expect(completeLines("no newline yet")).toEqual([]);
    expect(completeJsonLines('{"a":1}\n\n{"b":2}\n{"c":')).toEqual([{ a: 1 }, { b: 2 }]);
  });
});
