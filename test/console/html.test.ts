// The console's one escape: what untrusted text becomes in a page.
import { describe, expect, it } from "vitest";
import { escapeHtml, html, markInvisible } from "../../src/console/html.js";

describe("escapeHtml", () => {
  it("escapes the five metacharacters, so text is inert in content and in quoted attributes", () => {
    expect(escapeHtml(`<script>alert("x")</script> & 'y'`)).toBe(
      "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;",
    );
    expect(escapeHtml(undefined)).toBe("");
    expect(escapeHtml(42)).toBe("42");
  });

  it("shows bidi, zero-width and control characters as visible marks; keeps tabs and newlines", () => {
    expect(escapeHtml("safe\u202Etxt.exe")).toBe("safe⟦U+202E⟧txt.exe");
    expect(markInvisible("a\u200Bb\u2066c\u2069d\uFEFFe\u0007f\u00ADg")).toBe(
      "a⟦U+200B⟧b⟦U+2066⟧c⟦U+2069⟧d⟦U+FEFF⟧e⟦U+0007⟧f⟦U+00AD⟧g",
    );
    expect(markInvisible("a\tb\nc")).toBe("a\tb\nc");
  });
});

describe("html``", () => {
  it("escapes every interpolation unless it is html built here, arrays included", () => {
    const inner = html`<b>${"<i>"}</b>`;
    const out = html`<p title="${'" onmouseover="x'}">${inner}${["<a>", html`<br>`]}</p>`;
    expect(out.text).toBe('<p title="&quot; onmouseover=&quot;x"><b>&lt;i&gt;</b>&lt;a&gt;<br></p>');
  });
});
