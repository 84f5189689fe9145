import { describe, expect, it } from "vitest";
import { markdownTable, textTable } from "../src/index.js";

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
