// portcullis.json `credentials`: both forms, and every malformed entry named by its key.
import { describe, expect, it } from "vitest";
import { parseCredentials } from "../../src/vault/credentials.js";

const fail = (key: string, what: string): never => {
  throw new Error(`${key} ${what}`);
};

describe("credentials in portcullis.json", () => {
  it("reads the string form as env delivery and the object form as http by default", () => {
    expect(
      parseCredentials(
        {
          LEGACY_TOKEN: "legacy-scope",
          DB_PASSWORD: { secret: "db-dev", deliver: "env" },
          API_KEY: { secret: "api", hosts: ["API.example.com:443"] },
        },
        fail,
      ),
    ).toEqual([
      { env: "LEGACY_TOKEN", secret: "legacy-scope", deliver: "env", hosts: [] },
      { env: "DB_PASSWORD", secret: "db-dev", deliver: "env", hosts: [] },
      { env: "API_KEY", secret: "api", deliver: "http", hosts: ["api.example.com:443"] },
    ]);
  });

  it.each([
    [{ "BAD-NAME": "s" }, "credentials.BAD-NAME is not an environment variable name"],
    [{ K: "../x" }, "credentials.K must name a secret"],
    [{ K: { secret: "s", deliver: "ftp" } }, 'credentials.K.deliver must be "http" or "env"'],
    [{ K: { secret: "s", extra: 1, deliver: "env" } }, "credentials.K.extra is not a known key"],
    [{ K: { secret: "s" } }, "credentials.K.hosts must name at least one host"],
    // an env-delivered value goes wherever the server sends it: a host list would be no limit
    [
      { K: { secret: "s", deliver: "env", hosts: ["api.example.com"] } },
      'credentials.K.hosts does not apply to deliver "env"',
    ],
    [
      { K: { secret: "s", deliver: "env", hosts: [] } },
      'credentials.K.hosts does not apply to deliver "env"',
    ],
    [
      { K: { secret: "s", hosts: ["http://x"] } },
      'credentials.K.hosts[0] "http://x" is not HOST or HOST:PORT',
    ],
    [{ K: { secret: "s", hosts: [3] } }, "credentials.K.hosts must be an array"],
    // a destination no request can have: refused where it is written, not silently never matched
    [
      { K: { secret: "s", hosts: ["a.example", "api.example.com:99999"] } },
      'credentials.K.hosts[1] "api.example.com:99999" has a port outside 1-65535',
    ],
    [{ K: { secret: "s", hosts: ["api.example.com:0"] } }, "has a port outside 1-65535"],
    [{ K: { secret: "s", hosts: ["bad_host"] } }, "is not a DNS name or an IP address"],
    [{ K: 3 }, "credentials.K must be a secret name or an object"],
    [[], "credentials must be an object"],
  ])("refuses %j", (raw, message) => {
    expect(() => parseCredentials(raw, fail)).toThrow(message);
  });
});
