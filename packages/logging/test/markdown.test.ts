import { describe, expect, it } from "vitest";
import { markdownTable } from "../src/index.js";

describe("markdownTable", () => {
  it("writes a header, a separator and one line per row, escaping pipes inside cells", () => {
    expect(
      markdownTable(
        ["arm", "success"],
        [
          ["ppo", "12.5%"],
          ["a|b", "-"],
        ],
      ),
    ).toBe(["| arm | success |", "| --- | --- |", "| ppo | 12.5% |", "| a\\|b | - |"].join("\n"));
  });
});
