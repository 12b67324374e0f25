// `console.perCallProof: "fresh"` (or `--per-call-proof fresh`): approving one call of a per-call
// tool is proven by the request that decides it, never by the passphrase proof held since the
// login. Attacked as a page (or a same-user process) holding the session cookie, its CSRF token and
// the held proof's key would send it: the approval asks for the passphrase and decides nothing, a
// wrong passphrase decides nothing, the right one approves and the call goes through; a denial,
// which only removes authority, is still a click. A real gateway (per call) before the catalog
// fixture, the console process, plain HTTP.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { CLI, NODE } from "../helpers/paths.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";
import { handedProofKey, httpLogin, perCallShop, post, raw, requestState, reviewedIn } from "./helpers.js";

function projectWith(perCallProof: string): string {
  const dir = tempDir("portcullis-fresh-proof-project-");
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify({ console: { perCallProof } }));
  return dir;
}

const SETUPS = [
  { how: 'the configuration file\'s console.perCallProof "fresh"', file: "fresh", flag: [] as string[] },
  {
    how: "--per-call-proof fresh over a file that says window",
    file: "window",
    flag: ["--per-call-proof", "fresh"],
  },
];

describe("a console asking fresh proof for each call of a per-call tool", () => {
  for (const setup of SETUPS) {
    it(`does not approve a call on the held proof (${setup.how})`, async () => {
      const project = projectWith(setup.file);
      const { stateDir, gw, console_, end } = await perCallShop(
        "portcullis-console-fresh-",
        setup.flag,
        project,
      );
      try {
        const seen = new Set<string>();
        const call = gw.client.callTool({ name: "deploy", arguments: { note: "first" } }, undefined, {
          timeout: 90_000,
        });
        call.catch(() => {}); // awaited below
        const req = await nextStoredRequest(stateDir, seen);
        seen.add(req.request);

        const s = await httpLogin(console_.url);
        expect(s.proofKey, "the login holds a proof for the window").not.toBeNull();
        const card = await raw(`${console_.url}/requests/${req.request}`, { headers: { Cookie: s.cookie } });
        const path = `/requests/${req.request}/decide`;
        const fields = {
          csrf: s.csrf,
          proof: s.proofKey!,
          reviewed: reviewedIn(card.body),
          action: "approve-call",
        };

        const asked = await post(console_.url, path, fields, { Cookie: s.cookie });
        expect(asked.status, asked.body).toBe(200);
        expect(asked.body).toContain('data-testid="decision-proof"');
        expect(asked.body).toContain('data-testid="fresh-proof-note"');
        expect(requestState(stateDir, req.request)).toBe("pending");

        const wrong = await post(
          console_.url,
          path,
          { ...fields, passphrase: "not the passphrase" },
          { Cookie: s.cookie },
        );
        expect(wrong.status, wrong.body).toBe(401);
        expect(requestState(stateDir, req.request)).toBe("pending");

        const proven = await post(
          console_.url,
          path,
          { ...fields, passphrase: TEST_PASSPHRASE },
          { Cookie: s.cookie },
        );
        expect([200, 303], proven.body).toContain(proven.status);
        expect(requestState(stateDir, req.request)).toBe("approved");
        const result = await call;
        expect(result.isError ?? false).toBe(false);

        // a denial removes authority: the held proof (with the key just handed over) decides it
        const key = handedProofKey(proven.body) ?? s.proofKey!;
        const second = gw.client.callTool({ name: "deploy", arguments: { note: "second" } }, undefined, {
          timeout: 90_000,
        });
        second.catch(() => {}); // refused once denied
        const next = await nextStoredRequest(stateDir, seen);
        const denied = await post(
          console_.url,
          `/requests/${next.request}/decide`,
          { csrf: s.csrf, proof: key, action: "deny" },
          { Cookie: s.cookie },
        );
        expect([200, 303], denied.body).toContain(denied.status);
        expect(requestState(stateDir, next.request)).toBe("denied");
        await expect(second).rejects.toMatchObject({ code: -32057 });
      } finally {
        await end();
        removeDir(project);
      }
    }, 90_000);
  }

  it("refuses a --per-call-proof or console.perCallProof it does not know, naming the flag or key", () => {
    const flag = spawnSync(NODE, [CLI, "console", "--no-open", "--per-call-proof", "always"], {
      encoding: "utf8",
    });
    expect(flag.status).toBe(2);
    expect(flag.stderr).toContain('--per-call-proof must be "window"');
    const project = projectWith("sometimes");
    try {
      const file = spawnSync(NODE, [CLI, "console", "--no-open"], { encoding: "utf8", cwd: project });
      expect(file.status).toBe(2);
      expect(file.stderr).toContain(
        `${join(project, "portcullis.json")}: console.perCallProof must be "window"`,
      );
    } finally {
      removeDir(project);
    }
  });
});
