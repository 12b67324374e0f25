// The console's ticket keeps the human's wrong-passphrase count apart from everyone else's, but
// only for connections the kernel lists as this user's (src/console/ticket.ts, fromAnotherUser).
// Another user who caught the ticket (it passes through the opener's command line) could write
// logins and close each socket before the console reads it: the closed end is listed with no
// owner, and were "cannot tell" taken as this user's, those wrong passphrases would land in the
// ticket's count and make the human wait. Here a process of `nobody` does exactly that while the
// console is stopped (so each connection is read only after its sender closed); the human, with
// the ticket, still logs in at once. Spawning another user's process needs root, and the table
// is Linux's.
import { describe, expect, it } from "vitest";
import { readConsoleAddress } from "../../src/console/address.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { NOBODY, ROOT_ON_LINUX, scriptOutputAs } from "../helpers/otherUser.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";
import { cookiePairs, post, raw, startConsoleProcess } from "./helpers.js";

const ATTEMPTS = 6;

/** A login the console's form would send: the form's token, its cookie, and `extraCookies`. */
async function loginStatus(base: string, passphrase: string, extraCookies: string[] = []): Promise<number> {
  const form = await raw(`${base}/login`);
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
  const cookie = [...cookiePairs(form.headers["set-cookie"]), ...extraCookies].join("; ");
  return (await post(base, "/login", { csrf, passphrase }, { Cookie: cookie })).status;
}

describe("the ticket, sent by a process that closed its socket before the console read it", () => {
  it.skipIf(!ROOT_ON_LINUX)(
    "its wrong passphrases never slow the ticket's holder",
    async () => {
      const dir = newStateDir();
      const c = await startConsoleProcess(dir);
      const stopped = { now: false };
      try {
        const { ticket } = readConsoleAddress(dir)!;
        const u = new URL(c.url);
        const ticketCookie = `portcullis_ticket_${u.port}=${ticket}`;
        const form = await raw(`${c.url}/login`);
        const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
        const cookie = [...cookiePairs(form.headers["set-cookie"]), ticketCookie].join("; ");
        const requests = Array.from({ length: ATTEMPTS }, (_, i) => {
          const body = new URLSearchParams({ csrf, passphrase: `wrong ${i}` }).toString();
          return (
            `POST /login HTTP/1.1\r\nHost: ${u.host}\r\nOrigin: ${c.url}\r\nCookie: ${cookie}\r\n` +
            "Content-Type: application/x-www-form-urlencoded\r\n" +
            `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
          );
        });
        // each login written on its own connection, the socket closed as soon as it is written
        const script = `
          const net = require("node:net");
          const send = (text) => new Promise((resolve) => {
            const s = net.connect(${Number(u.port)}, "127.0.0.1", () => s.write(text, () => { s.destroy(); resolve(true); }));
            s.on("error", () => resolve(false));
          });
          (async () => {
            const sent = [];
            for (const r of ${JSON.stringify(requests)}) sent.push(await send(r));
            process.stdout.write(JSON.stringify(sent));
          })();
        `;
        // Stopped, the console accepts nothing: the kernel queues each connection, with the
        // login in it, and the sender has closed before the console reads a byte.
        process.kill(c.pid, "SIGSTOP");
        stopped.now = true;
        let sent: boolean[];
        try {
          sent = await scriptOutputAs<boolean[]>(NOBODY, script);
        } finally {
          process.kill(c.pid, "SIGCONT");
          stopped.now = false;
        }
        expect(sent).toEqual(Array.from({ length: ATTEMPTS }, () => true));
        await waitFor(
          () => (c.output().match(/a login failed/g) ?? []).length >= ATTEMPTS,
          15_000,
          `the console to read the ${ATTEMPTS} logins (${c.output()})`,
        );
        // Six wrong passphrases in one count slow its next attempt (the first five are free): the
        // ticket's holder is not slowed by them. (Their count is everyone else's, whose next
        // attempt waits a second; not asserted here, since that wait ends on its own.)
        expect(await loginStatus(c.url, TEST_PASSPHRASE, [ticketCookie])).toBe(200);
      } finally {
        if (stopped.now) process.kill(c.pid, "SIGCONT");
        await c.stop();
        removeDir(dir);
      }
    },
    30_000,
  );
});
