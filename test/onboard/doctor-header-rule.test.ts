// doctor judged a header written out in a host file by its name alone, while `run --url --header`
// warns by the rule a URL's query parameter is refused by: a secret-like name, a name ending in
// `key`, or a value that looks generated whatever the name. A generated token under a plain name
// (`X-Auth-Ref`), in the entry's own "headers" or in its run's --header, passed doctor and drew
// the gateway's warning. doctor now applies the same rule, never printing the value; readable
// values under plain names stay no finding. The real CLI.
import { describe, expect, it } from "vitest";
import { CLI, NODE } from "../helpers/paths.js";
import { doctorOf, expectNoValue, withState, writeServers } from "./doctorKit.js";
import { fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

describe("doctor's rule for a credential header", () => {
  it("is run --url's: a generated value under a plain name is a finding; readable values are not", async () => {
    const u = user();
    withState(u);
    const ref = "9f2c4e7a1b3d5f60a8c2e4b6d8f0a1c3";
    const trace = "Zq8vN3kLp0XyT7wRb5HsQ2";
    const entries = {
      generated: {
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { "X-Auth-Ref": ref, "X-Team": "blue", "X-Workspace": "acme-prod-2026-eu-west" },
      },
      wrapped: {
        command: NODE,
        args: [
          CLI,
          "run",
          "--label",
          "remote-w",
          "--url",
          "https://api.example.org/mcp",
          "--header",
          `X-Trace-Ref: ${trace}`,
        ],
      },
      readable: {
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { "X-Team": "blue", "X-Workspace": "acme-prod-2026-eu-west" },
      },
    };
    const mcp = writeServers(u.files["claude-code"], entries);
    const { json, text, findings } = await doctorOf(u, mcp);
    expect(findings.map((f) => f.what)).toEqual([
      `${mcp}: server "generated" sends the header "X-Auth-Ref" with its value written in its "headers", in clear: every process of this user can read it there`,
      `${mcp}: server "wrapped" sends the header "X-Trace-Ref" with its value written in a --header of the portcullis run in its "args", in clear: every process of this user can read it there`,
    ]);
    expectNoValue([json.stdout, json.stderr, text.stdout, text.stderr], [ref, trace]);
  });
});
