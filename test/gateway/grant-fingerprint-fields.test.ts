// A session grant names the tool with the fingerprint of its whole definition: a re-list that
// changes only a field the gateway does not read to judge a call (outputSchema, _meta, execution,
// icons, an annotation hint) stops the grant covering the tool, and the exact approved definition
// put back after the refusal (which ended the grant) is asked about again. Real gateway, the
// catalog fixture serving the definitions from a file, approvals by the real CLI with the
// passphrase. The contrast and the "run" policy: grant-fingerprint-revert.test.ts.
import { describe, it } from "vitest";
import type { ToolDef } from "../helpers/catalog.js";
import { DEPLOY, grantedCatalogGateway as gateway } from "../helpers/grantedCatalog.js";

/** Each change touches one field only; the grant for DEPLOY must not cover the result. */
const EXPANDING: [string, ToolDef][] = [
  ["outputSchema widened (additionalProperties dropped)", { ...DEPLOY, outputSchema: { type: "object" } }],
  ["_meta changed", { ...DEPLOY, _meta: { "example.com/target": "production" } }],
  ["execution changed", { ...DEPLOY, execution: { taskSupport: "optional" } }],
  ["icons changed", { ...DEPLOY, icons: [{ src: "https://example.com/other.png", mimeType: "image/png" }] }],
  ["readOnlyHint true → false", { ...DEPLOY, annotations: { readOnlyHint: false, title: "Deploy" } }],
];

// One gateway per change (run side by side): a generation's re-lists that each find a new revision
// are paced after the third (src/gateway/relistPace.ts), and each change here is two revisions.
describe.concurrent("a session grant is bound to the whole tool definition", () => {
  for (const [what, changed] of EXPANDING) {
    it(`onExpand "tool": ${what} stops the grant covering the tool; the exact approved definition put back asks again`, async ({
      expect,
      onTestFinished,
    }) => {
      const { approved, covered, call, relist, received } = await gateway(
        "tool",
        [DEPLOY],
        expect,
        onTestFinished,
      );
      await approved("deploy", { branch: "a" });
      await covered("deploy", { branch: "b" });
      await relist([changed]);
      const err = await call("deploy", { branch: "never" }).catch((e) => e);
      expect(err).toMatchObject({ code: -32051, data: { reason: "tool authority expanded" } });
      expect(received()).toEqual(["deploy:a", "deploy:b"]);
      // the refusal ended the grant (superseded): the definition it was signed for, put back
      // exactly, is asked about again
      await relist([DEPLOY]);
      await approved("deploy", { branch: "c" });
      expect(received()).toEqual(["deploy:a", "deploy:b", "deploy:c"]);
    });
  }
});
