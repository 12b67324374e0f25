// The wiki tools of the tests of a catalog change within one epoch: a tool that gains an input
// (fetch_page given a `url`: it can now reach any address, not only the wiki) is an expansion of
// its authority, and a tool beside it that does not change shows what the change does to the
// rest of the run's grants. Kept in one place so that every such test changes the same tool the
// same way.
import type { ToolDef } from "./catalog.js";

export const FETCH: ToolDef = {
  name: "fetch_page",
  description: "Fetch a page of the wiki.",
  inputSchema: { type: "object", required: ["page"], properties: { page: { type: "string" } } },
};
export const NOTE: ToolDef = {
  name: "add_note",
  description: "Add a note.",
  inputSchema: { type: "object", required: ["text"], properties: { text: { type: "string" } } },
};
/** fetch_page gains a `url` input: it can now reach any address, not only the wiki */
export const FETCH_URL: ToolDef = {
  ...FETCH,
  inputSchema: {
    ...FETCH.inputSchema,
    properties: { ...FETCH.inputSchema.properties, url: { type: "string" } },
  },
};
