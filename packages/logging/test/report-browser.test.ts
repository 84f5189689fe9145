import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchChromium, skipWithoutChromium, warnIfSkipped } from "@ragen/test-chromium";
import { describe, expect, it } from "vitest";
import { buildReport } from "../src/index.js";
import { syntheticMetrics, syntheticTrajectories } from "./fixtures/synthetic-run.js";

warnIfSkipped("report-browser.test.ts");

describe.skipIf(skipWithoutChromium)("HTML report in headless Chromium", () => {
  it("renders charts and images, runs no model-written script, and filters the viewer", async () => {
    const browser = await launchChromium({ webgpu: false });
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const requests: string[] = [];
      page.on("request", (r) => requests.push(r.url()));
      await page.setContent(buildReport(syntheticMetrics(), syntheticTrajectories(), { title: "Quest run" }));
      const state = await page.evaluate(() => ({
        pwned: (window as unknown as { __pwned?: boolean }).__pwned === true,
        charts: document.querySelectorAll("svg.chart").length,
        chartWidth: document.querySelector("svg.chart")!.getBoundingClientRect().width,
        imagesLoaded: Array.from(document.querySelectorAll("img.state")).every(
          (img) => (img as HTMLImageElement).naturalWidth > 0,
        ),
      }));
      expect(state.pwned).toBe(false);
      expect(state.charts).toBe(8);
      expect(state.chartWidth).toBeGreaterThan(100);
      expect(state.imagesLoaded).toBe(true);
      expect(requests.filter((u) => /^https?:/.test(u))).toEqual([]);

      await page.selectOption("#filter-env", "Bandit");
      const visible = await page.$$eval("#viewer details.trajectory", (ds) =>
        ds
          .filter((d) => (d as HTMLElement).style.display !== "none")
          .map((d) => (d as HTMLElement).dataset.env),
      );
      expect(visible).toEqual(["Bandit", "Bandit", "Bandit", "Bandit"]);

      // Outside the repo so tests leave no files behind; look at it when changing the report's layout.
      const outDir = join(tmpdir(), "ragen-logging");
      mkdirSync(outDir, { recursive: true });
      await page.selectOption("#filter-env", "");
      await page.screenshot({ path: join(outDir, "report.png"), fullPage: false });
    } finally {
      await browser.close();
    }
  });
});
