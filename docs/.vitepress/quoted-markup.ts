import type MarkdownIt from "markdown-it";

// VitePress compiles every page as a Vue template. The READMEs and doc comments it shows quote markup
// as plain text: `<think>`, `<answer>`, "You have clicked <value>.", and Jinja chat templates full of
// `{{ ... }}`. Vue would read those as elements and interpolations and fail the build, so they are
// rendered as text here. Real HTML (the few tags below, and comments) passes through unchanged.
const HTML_TAGS = new Set([
  "a",
  "abbr",
  "b",
  "br",
  "code",
  "details",
  "div",
  "em",
  "i",
  "img",
  "kbd",
  "p",
  "picture",
  "pre",
  "small",
  "source",
  "span",
  "strong",
  "sub",
  "summary",
  "sup",
  "table",
  "tbody",
  "td",
  "th",
  "thead",
  "tr",
]);

function isRealHtml(markup: string): boolean {
  const trimmed = markup.trim();
  if (trimmed.startsWith("<!--")) return true;
  const tag = /^<\/?([a-zA-Z][\w-]*)/.exec(trimmed)?.[1]?.toLowerCase();
  return tag !== undefined && HTML_TAGS.has(tag);
}

const escapeBraces = (html: string) => html.replace(/\{/g, "&#123;").replace(/\}/g, "&#125;");

export function keepQuotedMarkupAsText(md: MarkdownIt): void {
  for (const rule of ["html_inline", "html_block"] as const) {
    const render = md.renderer.rules[rule];
    md.renderer.rules[rule] = (tokens, index, options, env, self) => {
      const content = tokens[index]!.content;
      if (isRealHtml(content)) return render ? render(tokens, index, options, env, self) : content;
      return escapeBraces(md.utils.escapeHtml(content));
    };
  }
  for (const rule of ["text", "code_inline"] as const) {
    const render = md.renderer.rules[rule]!;
    md.renderer.rules[rule] = (tokens, index, options, env, self) =>
      escapeBraces(render(tokens, index, options, env, self));
  }
}
