import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createEnv, type Env, listPresets } from "@ragen/envs";
import type { Page } from "@ragen/test-chromium";
import { launchChromium, skipWithoutChromium, warnIfSkipped } from "@ragen/test-chromium";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAndServe, EXAMPLE_ROOT, type ServedPage } from "./helpers/page-server.js";

warnIfSkipped("page.test.ts");

// Screenshots to look at when changing the page (gitignored).
const OUTPUT_DIR = join(EXAMPLE_ROOT, "test-output");
// FrozenLake seed 5: Right, Down, Left all move the player and leave the episode running.
const SEED = 5;
const KEYS: readonly [string, string][] = [
  ["ArrowRight", "Right"],
  ["ArrowDown", "Down"],
  ["ArrowLeft", "Left"],
];

/** The same preset, seed and actions replayed in Node: what the page must show. */
function replay(preset: string, seed: number, actions: readonly string[]): Env {
  const env = createEnv(preset);
  env.reset(seed);
  const budget = listPresets()[preset]!.maxActionsPerTraj;
  actions.forEach((action, used) => {
    if (!env.done && used < budget) env.step(action);
  });
  return env;
}

async function open(page: Page, url: string, preset: string, seed: number): Promise<void> {
  await page.goto(`${url}?env=${preset}&seed=${seed}`);
  await page.waitForSelector("body[data-ready='true']");
}

const text = async (page: Page, selector: string) => (await page.textContent(selector))?.trim() ?? "";

let served: ServedPage | undefined;
beforeAll(async () => {
  if (!skipWithoutChromium) served = await buildAndServe();
}, 180_000);
afterAll(async () => served?.close());

describe.skipIf(skipWithoutChromium)("the page, built by Vite, in headless Chromium", () => {
  it("plays FrozenLake by keys, asks the oracle, and watches the checkpoint play a turn on WebGPU", async () => {
    const browser = await launchChromium({ webgpu: true });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
      const pageErrors: string[] = [];
      page.on("pageerror", (error) => pageErrors.push(error.message));
      await open(page, served!.url, "FrozenLake", SEED);
      expect(await text(page, "#state-text")).toBe(replay("FrozenLake", SEED, []).render());

      for (const [key] of KEYS) await page.keyboard.press(key);
      const expected = replay(
        "FrozenLake",
        SEED,
        KEYS.map(([, action]) => action),
      );
      expect(expected.done).toBe(false); // the seed was chosen for this
      expect(await text(page, "#state-text")).toBe(expected.render());
      expect(await text(page, "#status-actions")).toBe("3 / 10");
      expect(await text(page, "#status-done")).toBe("no");
      expect(await text(page, "#status-success")).toBe("no");
      expect(await page.locator("#moves li").allTextContents()).toEqual([
        "Right → 0",
        "Down → 0",
        "Left → 0",
      ]);

      await page.click("#hint");
      const hint = /^The oracle would play: (Up|Down|Left|Right)$/.exec(await text(page, "#hint-text"));
      expect(hint).not.toBeNull();
      expect(await page.getAttribute(`#pad button[data-action="${hint![1]}"]`, "class")).toContain("hinted");

      await page.click("#agent-step");
      await page.waitForFunction(
        () =>
          document.querySelector("#agent-turns .turn[data-turn='1']") !== null ||
          ["error", "unavailable"].includes(document.getElementById("agent")!.dataset.state ?? ""),
        undefined,
        { timeout: 200_000 },
      );
      expect(await text(page, "#agent-status")).not.toMatch(/Error/);
      expect(await text(page, "#agent-device")).toMatch(/^WebGPU adapter: .+/);
      const think = await text(page, ".turn[data-turn='1'] .think");
      expect(think.length).toBeGreaterThan(10);
      expect(think).not.toMatch(/broke the format/);
      const action = await text(page, ".turn[data-turn='1'] .action");
      expect(["Up", "Down", "Left", "Right"]).toContain(action);
      // The agent played the same start state as the person, and the page shows where its move led.
      expect(await text(page, ".turn[data-turn='1'] .state-after")).toBe(
        replay("FrozenLake", SEED, [action]).render(),
      );
      expect(await text(page, "#agent-summary")).toMatch(/actions 1 \/ 10/);

      mkdirSync(OUTPUT_DIR, { recursive: true });
      await page.screenshot({ path: join(OUTPUT_DIR, "frozenlake.png"), fullPage: true });
      expect(pageErrors).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it("plays Sokoban by keys and WebShop-lite by its search box and links; without WebGPU the agent says so", async () => {
    // No --enable-unsafe-webgpu: headless Chromium then gives no adapter, as a browser without WebGPU would.
    const browser = await launchChromium({ webgpu: false });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
      await open(page, served!.url, "SimpleSokoban", 3);
      await page.keyboard.press("ArrowUp");
      await page.click('#pad button[data-action="Left"]');
      expect(await text(page, "#state-text")).toBe(replay("SimpleSokoban", 3, ["Up", "Left"]).render());
      expect(await text(page, "#status-actions")).toBe("2 / 10");

      await page.click("#agent-step");
      await page.waitForFunction(() =>
        ["error", "unavailable"].includes(document.getElementById("agent")!.dataset.state ?? ""),
      );
      expect(await page.getAttribute("#agent", "data-state")).toBe("unavailable");
      expect(await text(page, "#agent-status")).toMatch(/WebGPU/);
      expect(await page.isDisabled("#agent-play")).toBe(true);

      await open(page, served!.url, "WebShopCompact", 11);
      await page.click("#hint"); // fills the search box with the oracle's query
      const query = await page.inputValue("#shop-query");
      expect(query.length).toBeGreaterThan(0);
      await page.click(".shop-search button[type='submit']");
      await page.waitForSelector(".shop[data-page='results']");
      const firstResult = page.locator(".shop-results button").first();
      const asin = (await firstResult.textContent())!.trim();
      await firstResult.click();
      await page.waitForSelector(".shop[data-page='item']");
      const expected = replay("WebShopCompact", 11, [`search[${query}]`, `click[${asin.toLowerCase()}]`]);
      expect(await text(page, "#state-text")).toBe(expected.render());
      expect(await text(page, "#status-actions")).toBe("2 / 9");
      await page.screenshot({ path: join(OUTPUT_DIR, "webshop.png"), fullPage: true });
    } finally {
      await browser.close();
    }
  });
});
