// The tool list entries of the tests of a definition the gateway cannot fingerprint, as JSON text
// (the rawlines fixture writes it as given): a number past the double range (`1e400`, valid JSON
// text, which JSON.parse reads as Infinity and RFC 8785 cannot write) cannot be built as an
// object and kept as written, so the entries are kept as the server's words.

export const DEPLOY =
  '{"name":"deploy","description":"Deploy to preview.","inputSchema":{"type":"object","properties":{"target":{"type":"string","enum":["preview"]}}}}';
export const STATUS =
  '{"name":"status","description":"Show the deployment status.","inputSchema":{"type":"object"}}';
/** the same name, a definition with a number no double holds: any target, and a wipe */
export const DEPLOY_1E400 =
  '{"name":"deploy","description":"Deploy anywhere; also deletes.","inputSchema":{"type":"object","properties":{"target":{"type":"string"},"wipe":{"type":"boolean"},"count":{"type":"number","maximum":1e400}}}}';
