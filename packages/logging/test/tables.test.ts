import { describe, expect, it } from "vitest";
import { formatPercent, markdownTable, textTable } from "../src/index.js";

const ROWS = [
  ["ppo", "12.5%"],
  ["a|b", "-"],
];

describe("markdownTable", () => {
  it("writes a header, a separator and one line per row, escaping pipes inside cells", () => {
    expect(markdownTable(["arm", "success"], ROWS)).toBe(
      ["| arm | success |", "| --- | --- |", "| ppo | 12.5% |", "| a\\|b | - |"].join("\n"),
    );
  });

  it("pads every column to its widest escaped cell when aligned", () => {
    expect(markdownTable(["arm", "success"], ROWS, { aligned: true })).toBe(
      ["| arm  | success |", "| ---- | ------- |", "| ppo  | 12.5%   |", "| a\\|b | -       |"].join("\n"),
    );
  });
});

describe("textTable", () => {
  it("pads columns to their widest cell, rules the header and leaves no trailing spaces", () => {
    expect(
      textTable(
        ["env", "success", "note"],
        [
          ["Bandit", "93.8%", ""],
          ["FrozenLake", "-", "hard"],
        ],
      ),
    ).toBe(
      [
        "env         success  note",
        "----------  -------  ----",
        "Bandit      93.8%",
        "FrozenLake  -        hard",
      ].join("\n"),
    );
  });

  it("indents every line and can leave the rule out", () => {
    expect(textTable(["tag", "budget"], [["Bandit", "1"]], { indent: "  ", rule: false })).toBe(
      ["  tag     budget", "  Bandit  1"].join("\n"),
    );
  });
});

describe("formatPercent", () => {
  it("prints a rate with one decimal, and a dash where there is no figure", () => {
    expect(formatPercent(0.421875)).toBe("42.2%");
    expect(formatPercent(1)).toBe("100.0%");
    expect(formatPercent(0)).toBe("0.0%");
    expect(formatPercent(Number.NaN)).toBe("-");
    expect(formatPercent(Number.POSITIVE_INFINITY)).toBe("-");
  });
});
