// A console page drawn while a passphrase proof was held draws its forms without the passphrase
// (the Audit's "Open the audit" with its field left empty, the Sessions pager without one, the
// passkey form's field left empty): the held proof's key decides them. Sent after that proof
// ended, they used to be tried as a wrong passphrase: the Audit answered "wrong passphrase" and
// each such click counted toward the console's slowdown (the sixth held even the right passphrase
// back). Now an empty or absent passphrase is never tried: the form asks for it, saying why the
// proof is gone when it was dropped (rotate-keys), and the nav bar of the next page the human
// opens says it once; an empty login is not logged as a failed one (it was, while refused before
// the slowdown: "a login failed" in the console's output for each). A real console process, the real CLI rotating;
// plain HTTP (pipelined where what a request counts decides the next one's answer).
import { describe, expect, it } from "vitest";
import { removeDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseFile } from "../helpers/passphraseChange.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { httpLogin, type PipelinedRequest, pipelined, raw, startConsoleProcess } from "./helpers.js";

const NEW = "the passphrase after the rotation of the audit test";
type Session = Awaited<ReturnType<typeof httpLogin>>;

/** The Audit form as a page drawn while the proof was held sends it: the proof key, no passphrase typed. */
function auditOpen(url: string, s: Session, fields: Record<string, string>): PipelinedRequest {
  return {
    path: "/audit/open",
    headers: { Origin: url, Cookie: s.cookie, "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ csrf: s.csrf, proof: s.proofKey ?? "", ...fields }).toString(),
  };
}

/** The passkey form's first step as the page's script sends it with the field left empty (at localhost). */
function passkeyOptions(url: string, s: Session): PipelinedRequest {
  const port = new URL(url).port;
  return {
    path: "/passkeys/options",
    headers: {
      Host: `localhost:${port}`,
      Origin: `http://localhost:${port}`,
      Cookie: s.cookie,
      "Content-Type": "application/json",
      "X-CSRF-Token": s.csrf,
      "X-Proof-Key": s.proofKey ?? "",
    },
    body: "{}",
  };
}

async function loginForm(url: string, passphrase: string): Promise<PipelinedRequest> {
  const form = await raw(`${url}/login`);
  const token = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
  return {
    path: "/login",
    headers: {
      Origin: url,
      Cookie: String(form.headers["set-cookie"]).split(";")[0]!,
      "Content-Type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ csrf: token, passphrase }).toString(),
  };
}

async function rotate(stateDir: string): Promise<void> {
  const rotated = await runCli(["rotate-keys"], {
    stateDir,
    env: { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEW) },
  });
  expect(rotated.code, rotated.stderr).toBe(0);
}

const home = (url: string, s: Session, headers: Record<string, string> = {}) =>
  raw(`${url}/`, { headers: { Cookie: s.cookie, ...headers } });

describe("a form drawn while a passphrase proof was held, sent after the proof ended", () => {
  it("after rotate-keys: the Audit's forms and the passkey form ask for the passphrase, saying the keys were rotated, and no attempt is counted", async () => {
    const dir = newStateDir();
    const c = await startConsoleProcess(dir);
    try {
      const s = await httpLogin(c.url);
      expect(s.proofKey, "the login holds a proof").not.toBeNull();
      // the Audit page as drawn while the proof is held: its field may be left empty
      const drawn = await raw(`${c.url}/audit`, { headers: { Cookie: s.cookie } });
      expect(drawn.body).toMatch(
        /<input type="password" name="passphrase" autocomplete="current-password"\s+data-testid="audit-proof">/,
      );
      const opened = (await pipelined(c.url, [auditOpen(c.url, s, { passphrase: "" })]))[0]!;
      expect(opened.body, "the held proof opens it").toContain("<h2>Sessions</h2>");

      await rotate(dir);

      // Seven forms sent empty, six of them the Audit's (more than the slowdown lets pass free),
      // then the new passphrase right after them: were they counted, it would be held back.
      const empty = [
        auditOpen(c.url, s, { passphrase: "" }),
        auditOpen(c.url, s, { "sessions-from": "0" }), // the Sessions pager: no field at all
        passkeyOptions(c.url, s),
        auditOpen(c.url, s, { passphrase: "" }),
        auditOpen(c.url, s, { "sessions-from": "0" }),
        auditOpen(c.url, s, { passphrase: "" }),
        auditOpen(c.url, s, { "sessions-from": "0" }),
      ];
      const answers = await pipelined(c.url, [...empty, auditOpen(c.url, s, { passphrase: NEW })]);
      const right = answers.pop()!;
      // first what a count would show: the right passphrase held back ("too many wrong passphrases")
      expect(right.status, right.body).toBe(200);
      expect(right.body).toContain("<h2>Sessions</h2>");
      answers.forEach((a, i) => {
        expect(a.body, `answer ${i}`).not.toContain("wrong passphrase");
        expect(a.body, `answer ${i}`).not.toContain("too many wrong passphrases");
        expect(a.body, `answer ${i}`).toContain("the keys were rotated");
        expect(a.body, `answer ${i}`).not.toContain("<h2>Sessions</h2>");
      });
      for (const i of [0, 1, 3, 4, 5, 6]) {
        expect(answers[i]!.status, answers[i]!.body).toBe(200);
        // asked again, now with the field required: nothing is held for it
        expect(answers[i]!.body).toContain('required data-testid="audit-proof"');
      }
      expect(answers[2]!.status).toBe(401);
      expect(JSON.parse(answers[2]!.body).error).toMatch(
        /^adding a passkey needs the passphrase: the keys were rotated/,
      );
      expect(c.output()).not.toContain(NEW);
    } finally {
      await c.stop();
      removeDir(dir);
    }
  }, 30_000);

  it("after rotate-keys the nav bar says why once, on the next page the human opens (not on the page's own refetch)", async () => {
    const dir = newStateDir();
    const c = await startConsoleProcess(dir);
    try {
      const s = await httpLogin(c.url);
      expect((await home(c.url, s)).body).toMatch(/passphrase proven \(\d+s left\)/);
      await rotate(dir);
      // the page's script refetching <main> on a change: its nav bar is not shown, so not said there
      const refetched = await home(c.url, s, { "x-portcullis-refresh": "1" });
      expect(refetched.status).toBe(200);
      expect(refetched.body).not.toContain("passphrase proven");
      expect(refetched.body).not.toContain('data-testid="proof-dropped"');
      const next = await home(c.url, s);
      expect(next.body).toMatch(
        /<span class="proof" data-testid="proof-state">decisions ask for the passphrase <span role="status" data-testid="proof-dropped">\(the passphrase proof held was dropped: the keys were rotated\)<\/span><\/span>/,
      );
      const later = await home(c.url, s);
      expect(later.body).toContain(
        '<span class="proof" data-testid="proof-state">decisions ask for the passphrase</span>',
      );
    } finally {
      await c.stop();
      removeDir(dir);
    }
  }, 30_000);

  it("after the proof window passed: the Audit's form asks for the passphrase and counts no attempt; an empty login is none either, nor logged as a failed login", async () => {
    const dir = newStateDir();
    const c = await startConsoleProcess(dir, ["--proof-window", "1"]);
    try {
      const s = await httpLogin(c.url);
      expect(s.proofKey).not.toBeNull();
      await waitFor(
        async () => !(await home(c.url, s)).body.includes("passphrase proven"),
        10_000,
        "the one-second proof window to pass",
      );
      const answers = await pipelined(c.url, [
        ...Array.from({ length: 6 }, (_, i) =>
          auditOpen(c.url, s, i % 2 ? { "sessions-from": "0" } : { passphrase: "" }),
        ),
        auditOpen(c.url, s, { passphrase: TEST_PASSPHRASE }),
      ]);
      const right = answers.pop()!;
      // first what a count would show: the right passphrase held back ("too many wrong passphrases")
      expect(right.status, right.body).toBe(200);
      expect(right.body).toContain("<h2>Sessions</h2>");
      for (const a of answers) {
        expect(a.status, a.body).toBe(200);
        expect(a.body).not.toContain("wrong passphrase");
        expect(a.body).toContain(
          "no passphrase proof is held now (one is held for 1 s after the passphrase is typed): type the passphrase to open the audit",
        );
        expect(a.body).toContain('required data-testid="audit-proof"');
      }

      // the login form sent empty six times: asked again, never counted
      const logins = await pipelined(c.url, [
        ...(await Promise.all(Array.from({ length: 6 }, () => loginForm(c.url, "")))),
        await loginForm(c.url, TEST_PASSPHRASE),
      ]);
      expect(logins.map((l) => l.status)).toEqual([400, 400, 400, 400, 400, 400, 200]);
      expect(logins[0]!.body).toContain("no passphrase was given: type the passphrase");
      expect(logins[6]!.body).toContain('name="portcullis-proof"');

      // nor logged as a failed login: only the wrong passphrase sent after them is. Its line is
      // written after theirs on the same stream, so once it is read theirs would have been.
      const wrong = (await pipelined(c.url, [await loginForm(c.url, "not the passphrase")]))[0]!;
      expect(wrong.status, wrong.body).toBe(401);
      await waitFor(
        () => c.output().includes("a login failed"),
        10_000,
        "the wrong passphrase's line in the console's output",
      );
      expect(c.output().match(/a login failed/g), c.output()).toHaveLength(1);
    } finally {
      await c.stop();
      removeDir(dir);
    }
  }, 30_000);
});
