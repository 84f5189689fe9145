import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, launchChromium, skipWithoutChromium, warnIfSkipped } from "@ragen/test-chromium";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BrowserBundle, bundleBrowserPage } from "../scripts/bundle-browser.js";

warnIfSkipped("browser-bundle.test.ts (its page tests)");

const NODE_BUILTINS = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);

let workDir: string;
let bundle: BrowserBundle;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), "ragen-embed-envs-"));
  bundle = await bundleBrowserPage(join(workDir, "page"));
});
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe("the browser bundle", () => {
  it("holds @ragen/envs and no Node built-in", () => {
    const inputs = Object.keys(bundle.metafile.inputs);
    expect(inputs.some((path) => path.includes("envs/dist/"))).toBe(true);
    const imports = Object.values(bundle.metafile.inputs).flatMap((input) =>
      input.imports.map((i) => i.path),
    );
    expect(imports.filter((path) => NODE_BUILTINS.has(path))).toEqual([]);
    expect(bundle.code).not.toMatch(/\brequire\(["'](node:)?(fs|path|os|crypto|util)["']\)/);
    expect(bundle.code.length).toBeGreaterThan(50_000);
  });

  it("would fail on a Node built-in, so the check above means something", async () => {
    const entry = join(workDir, "uses-node.ts");
    writeFileSync(entry, 'import { readFileSync } from "node:fs";\nconsole.log(readFileSync);\n');
    await expect(bundleBrowserPage(join(workDir, "rejected"), entry)).rejects.toThrow(/node:fs/);
  });
});

describe.skipIf(skipWithoutChromium)("the page in headless Chromium", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium({ webgpu: false });
  });
  afterAll(async () => browser?.close());

  it("renders an env, steps it by key, typed action and oracle, and reports success", async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(pathToFileURL(join(bundle.outDir, "index.html")).href);

    const options = await page.$$eval("#preset option", (os) =>
      os.map((o) => (o as HTMLOptionElement).value),
    );
    expect(options).toEqual(expect.arrayContaining(["FrozenLake", "SimpleSokoban", "Countdown", "WebShop"]));

    // FrozenLakeDeterministic seed 1: P at the top left, goal two rows down and one right.
    await page.fill("#seed", "1");
    await page.selectOption("#preset", "FrozenLakeDeterministic");
    expect(await page.textContent("#text")).toBe("P___\n_O__\n_G__\n____");
    expect(await page.$$eval("#actions button", (bs) => bs.map((b) => b.textContent))).toEqual([
      "Left",
      "Down",
      "Right",
      "Up",
    ]);

    await page.keyboard.press("ArrowDown");
    expect(await page.textContent("#text")).toBe("____\nPO__\n_G__\n____");

    await page.fill("#action", "Jump");
    await page.press("#action", "Enter");
    expect(await page.textContent("#log li:last-child")).toContain("invalid");
    expect(await page.textContent("#text")).toBe("____\nPO__\n_G__\n____");

    for (let i = 0; i < 10 && (await page.getAttribute("#status", "data-done")) !== "true"; i++)
      await page.click("#oracle");
    const status = await page.$eval("#status", (s) => ({ ...(s as HTMLElement).dataset }));
    expect(status).toMatchObject({ done: "true", success: "true", totalReward: "1" });
    expect(await page.textContent("#text")).toContain("√");
    expect(
      await page.$$eval("#actions button", (bs) => bs.every((b) => (b as HTMLButtonElement).disabled)),
    ).toBe(true);
    const boardWidth = await page.$eval("#board", (img) => (img as HTMLImageElement).naturalWidth);
    expect(boardWidth).toBeGreaterThan(0);
    expect(errors).toEqual([]);
  });

  it("plays a free-form env (Countdown) from the typed box", async () => {
    const page = await browser.newPage();
    await page.goto(pathToFileURL(join(bundle.outDir, "index.html")).href);
    await page.fill("#seed", "1");
    await page.selectOption("#preset", "Countdown");
    expect(await page.textContent("#text")).toBe("Target: 78, nums: [60, 57, 78, 3]");
    // Every number once but the wrong total: RAGEN's format score, 0.1, and the episode is over.
    await page.fill("#action", "60 + 57 + 78 + 3");
    await page.press("#action", "Enter");
    const missed = await page.$eval("#status", (s) => ({ ...(s as HTMLElement).dataset }));
    expect(missed).toMatchObject({ done: "true", success: "false", totalReward: "0.1" });

    await page.click("#reset");
    await page.fill("#action", "60 - 57 + 78 - 3");
    await page.press("#action", "Enter");
    expect(await page.getAttribute("#status", "data-success")).toBe("true");
  });
});
