// node lastWords.mjs HOW VALUE — a process with the gateway's last-resort guard (built, from
// dist/), installed as `portcullis run` installs it, and VALUE released under the scope
// "payments" as the vault releases a value to a server; then it goes badly wrong, HOW:
//   throw     an exception nothing catches, whose message is a JSON parse error quoting VALUE
//   message   an exception nothing catches, with VALUE whole in its message
//   reject    a promise rejection nothing handles, with VALUE whole in its message
//   internal  the command line's internal error (src/cli/main.ts), with VALUE in its message
//   url       an exception nothing catches, quoting a URL with a password that was never released
//   huge      an exception nothing catches, its message a megabyte long with VALUE where the
//             report is cut (at 64 KiB: its first five characters before the cut)
//   warning   a warning (process.emitWarning) with VALUE whole in its message and its first
//             twelve characters in its detail, then an ordinary warning; the process then ends
//             as usual (exit 0)
// Writes "released" on stdout first, so that a test knows the value was released.
const [how, value] = process.argv.slice(2);
const dist = (p) => import(new URL(`../../../dist/${p}`, import.meta.url).href);
const { installLastResort, reportInternalError, scrubAtLastResort } = await dist("cli/lastResort.js");
const { ReleasedValues } = await dist("vault/scrub.js");

installLastResort(); // src/cli/main.ts, before `run` loads
const released = new ReleasedValues();
scrubAtLastResort(released); // src/cli/serve.ts
released.add("payments", value); // src/vault/delivery.ts, at spawn
process.stdout.write("released\n");

// what the server answered, say, and the gateway failed to read
const input = `{"ok": true, "key": ${value}}`;
if (how === "throw") setTimeout(() => JSON.parse(input), 0);
else if (how === "message")
  setTimeout(() => {
    throw new Error(`the upstream answered ${JSON.stringify(value)}, not a session`);
  }, 0);
else if (how === "reject") Promise.reject(new TypeError(`could not read ${value} as a header`));
else if (how === "url")
  setTimeout(() => {
    throw new Error("could not reach https://deploy:Hx81kQ0pR7vW@db.example.com/prod");
  }, 0);
else if (how === "huge")
  setTimeout(() => {
    // the stack starts "Error: "
    throw new Error(`${"x".repeat(64 * 1024 - 7 - 5)}${value}${"y".repeat(1 << 20)}`);
  }, 0);
else if (how === "warning") {
  // what a library warns of, say, quoting what it was given
  process.emitWarning(`could not read ${value} as a header`, {
    code: "PORTCULLIS_TEST",
    detail: `the header began ${value.slice(0, 12)}`,
  });
  process.emitWarning("an ordinary warning, after it");
} else if (how === "internal") {
  // as main.ts reports an error no sentence was written for, and its exit code
  reportInternalError(new RangeError(`no room for ${value}`));
  process.exitCode = 70;
} else throw new Error(`unknown HOW ${how}`);
