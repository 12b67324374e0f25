/**
 * The demo's way of deciding through the console, as a logged-in browser would: the login form
 * (its token and cookie, then the passphrase), then the decision form with the session's CSRF
 * token and the proof key the login's answer handed over (as the console's script sends it back),
 * both POSTed with the console's own Origin.
 */
import { request } from "node:http";

interface Reply {
  status: number;
  cookies: string[];
  location: string | undefined;
  body: string;
}

function send(base: string, path: string, cookie: string, form?: Record<string, string>): Promise<Reply> {
  const u = new URL(path, base);
  const body = form ? new URLSearchParams(form).toString() : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: form ? "POST" : "GET",
        headers: {
          ...(cookie ? { Cookie: cookie } : {}),
          ...(form ? { Origin: base, "Content-Type": "application/x-www-form-urlencoded" } : {}),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => {
          text += d;
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            cookies: (res.headers["set-cookie"] ?? []).map((c) => c.split(";")[0]!),
            location: res.headers.location,
            body: text,
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
const proofKeyOf = (html: string) => /<meta name="portcullis-proof" content="([^"]+)"/.exec(html)?.[1] ?? "";

export class ConsoleClient {
  private constructor(
    readonly base: string,
    private readonly cookie: string,
    private readonly csrf: string,
    private readonly proofKey: string,
  ) {}

  static async login(base: string, passphrase: string): Promise<ConsoleClient> {
    const form = await send(base, "/login", "");
    const r = await send(base, "/login", form.cookies.join("; "), { csrf: csrfOf(form.body), passphrase });
    const session = r.cookies.find((c) => c.startsWith("portcullis_session_") && !c.endsWith("="));
    // 200: a page handing over the proof key; 303: no proof is held (console.proofWindow 0).
    if ((r.status !== 200 && r.status !== 303) || !session) {
      throw new Error(`the console refused the login (HTTP ${r.status})`);
    }
    const home = await send(base, "/", session);
    return new ConsoleClient(base, session, csrfOf(home.body), proofKeyOf(r.body));
  }

  async decide(
    request: string,
    action: "approve-session" | "approve-call" | "deny",
    reason = "",
  ): Promise<void> {
    // The request's page, as the human has it open: its form names the review it shows.
    const card = await send(this.base, `/requests/${encodeURIComponent(request)}`, this.cookie);
    const reviewed = /name="reviewed" value="([^"]+)"/.exec(card.body)?.[1] ?? "";
    const r = await send(this.base, `/requests/${encodeURIComponent(request)}/decide`, this.cookie, {
      csrf: this.csrf,
      proof: this.proofKey,
      reviewed,
      action,
      reason,
    });
    if (r.status !== 303) throw new Error(`the console did not decide ${request} (HTTP ${r.status})`);
  }
}
