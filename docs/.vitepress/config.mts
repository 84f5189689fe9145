import { readdirSync, readFileSync } from "node:fs";
import { defineConfig } from "vitepress";
import { keepQuotedMarkupAsText } from "./quoted-markup";
import { readmeLinksToPages } from "./readme-links";

interface SidebarItem {
  text: string;
  link: string;
}

/** The pages of a docs/ folder, titled by their "title:" front matter or the included README's heading. */
function pagesIn(folder: "packages" | "examples"): SidebarItem[] {
  const dir = new URL(`../${folder}/`, import.meta.url);
  return readdirSync(dir)
    .filter((file) => file.endsWith(".md"))
    .sort()
    .map((file) => {
      const page = readFileSync(new URL(file, dir), "utf8");
      const include = /<!--@include:\s*(\S+?)\s*-->/.exec(page)?.[1];
      const heading = include
        ? /^# (.+)$/m.exec(readFileSync(new URL(include, new URL(file, dir)), "utf8"))?.[1]
        : undefined;
      const title = /^title:\s*"?(.+?)"?$/m.exec(page)?.[1] ?? heading;
      if (!title)
        throw new Error(`docs/${folder}/${file} needs a "title:" in its front matter or an included heading`);
      return { text: title, link: `/${folder}/${file.replace(/\.md$/, "")}` };
    });
}

/** The API reference sidebar TypeDoc writes (`pnpm --filter @ragen/docs api`). */
function apiSidebar(): SidebarItem[] {
  const file = new URL("../api/typedoc-sidebar.json", import.meta.url);
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(`docs/api/typedoc-sidebar.json is missing or unreadable: run TypeDoc first (${error})`);
  }
}

export default defineConfig({
  title: "RAGEN.ts",
  description: "Train LLM agents with multi-turn reinforcement learning in TypeScript, on WebGPU.",
  // docs/README.md describes this folder for people browsing the repository; it is not a page.
  srcExclude: ["README.md"],
  cleanUrls: true,
  lastUpdated: false,
  // Every dead link fails the build; nothing is exempt.
  ignoreDeadLinks: false,
  markdown: {
    config(md) {
      keepQuotedMarkupAsText(md);
      readmeLinksToPages(md);
    },
  },
  // The local search index of the API pages is one large chunk; that is expected.
  vite: { build: { chunkSizeWarningLimit: 4096 } },
  themeConfig: {
    nav: [
      { text: "Getting started", link: "/getting-started" },
      { text: "Guides", link: "/guide/adding-an-environment" },
      { text: "Packages", link: "/packages/envs" },
      { text: "API", link: "/api/" },
    ],
    sidebar: {
      "/api/": [{ text: "API reference", link: "/api/", items: apiSidebar() }],
      "/": [
        { text: "Introduction", items: [{ text: "Getting started", link: "/getting-started" }] },
        {
          text: "Guides",
          items: [
            { text: "Adding an environment", link: "/guide/adding-an-environment" },
            { text: "The Quest homework", link: "/guide/quest-homework" },
            { text: "Performance", link: "/guide/performance" },
            { text: "Reliability", link: "/guide/reliability" },
            { text: "Remote rollouts on vLLM", link: "/guide/remote-rollouts" },
          ],
        },
        { text: "Packages", items: pagesIn("packages") },
        { text: "Examples", items: pagesIn("examples") },
        { text: "API reference", link: "/api/" },
      ],
    },
    search: { provider: "local" },
    outline: { level: [2, 3] },
  },
});
