import { describe, expect, it } from "vitest";
import { gridSvg } from "../src/index.js";

const styles = { a: { fill: "#fff", label: "a" } };
const widthOf = (svg: string) => Number(/<svg[^>]* width="(\d+)"/.exec(svg)?.[1]);

describe("gridSvg", () => {
  it("is as wide as the grid when the caption is short", () => {
    expect(widthOf(gridSvg([["a", "a", "a", "a"]], styles, { caption: "ok" }))).toBe(4 * 48);
  });

  it("widens the picture to hold a caption longer than the grid, so it is not clipped", () => {
    const caption = "Actions taken: 2 · fell into a hole";
    const svg = gridSvg([["a", "a", "a", "a"]], styles, { caption });
    expect(widthOf(svg)).toBeGreaterThanOrEqual(caption.length * 14 * 0.55);
    expect(svg).toContain(`viewBox="0 0 ${widthOf(svg)} `);
  });
});
