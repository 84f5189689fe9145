import { readdirSync, readFileSync } from "node:fs";
import { defineConfig } from "vitepress";
import { keepQuotedMarkupAsText } from "./quoted-markup";

interface SidebarItem {
  text: string;
  link: string;
}

/** One page per public package, in the order of docs/packages/*.md, titled with the package name. */
function packagePages(): SidebarItem[] {
  const dir = new URL("../packages/", import.meta.url);
  return readdirSync(dir)
    .filter((file) => file.endsWith(".md"))
    .sort()
    .map((file) => {
      const title = /^title:\s*(.+)$/m
        .exec(readFileSync(new URL(file, dir), "utf8"))?.[1]
        ?.replace(/^"(.*)"$/, "$1");
      if (!title) throw new Error(`docs/packages/${file} needs a "title:" line in its front matter`);
      return { text: title, link: `/packages/${file.replace(/\.md$/, "")}` };
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
  markdown: { config: keepQuotedMarkupAsText },
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
          ],
        },
        { text: "Packages", items: packagePages() },
        {
          text: "Examples",
          items: [
            { text: "Quest: FrozenLake + Bandit", link: "/examples/quest-frozenlake" },
            { text: "Bandit generalisation", link: "/examples/bandit-generalisation" },
            { text: "Sokoban: StarPO-S vs PPO", link: "/examples/sokoban-starpo" },
            { text: "WebShop: A*-PO vs StarPO", link: "/examples/webshop-apo" },
          ],
        },
        { text: "API reference", link: "/api/" },
      ],
    },
    search: { provider: "local" },
    outline: { level: [2, 3] },
  },
});
