import type MarkdownIt from "markdown-it";

// The package and example READMEs are written for GitHub and npm, so they link to each other by
// repository path ("../../packages/envs/README.md#presets", "../../packages/cli"). Included into this
// site, the same README is the page /packages/envs: such links are pointed at the page instead.
const README_LINK = /^(?:\.\.\/)+(packages|examples)\/([\w-]+)(?:\/|\/README\.md)?(#.*)?$/;
// Any other relative link in an included README names a file of the repository ("quest.yaml",
// "src/config.ts"). The site does not serve the sources, so those keep their text and lose the link.
// (The pages of docs/packages and docs/examples link to the site with absolute paths for this reason.)
const RELATIVE = /^(?![a-z][a-z0-9+.-]*:|\/|#)/i;

interface PageEnv {
  relativePath?: string;
}

export function readmeLinksToPages(md: MarkdownIt): void {
  md.core.ruler.after("inline", "readme-links-to-pages", (state) => {
    const page = (state.env as PageEnv).relativePath ?? "";
    const includesReadme = /^(packages|examples)\//.test(page);
    for (const block of state.tokens) {
      if (!block.children) continue;
      const dropped: boolean[] = [];
      block.children = block.children.filter((token) => {
        if (token.type === "link_close") return !dropped.pop();
        if (token.type !== "link_open") return true;
        const href = token.attrGet("href") ?? "";
        const readme = README_LINK.exec(href);
        if (readme) token.attrSet("href", `/${readme[1]}/${readme[2]}${readme[3] ?? ""}`);
        const drop = !readme && includesReadme && RELATIVE.test(href);
        dropped.push(drop);
        return !drop;
      });
    }
  });
}
