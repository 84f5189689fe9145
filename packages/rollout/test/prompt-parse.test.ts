import { describe, expect, it } from "vitest";
import { deservesFormatPenalty, parseResponse } from "../src/parse.js";
import {
  buildChatMessages,
  formatReward,
  instructionText,
  type PromptFormat,
  turnText,
} from "../src/prompt.js";

const format: PromptFormat = { enableThinking: true, maxActionsPerTurn: 3, maxResponseLength: 100 };
const ACTIONS = ["Left", "Down", "Right", "Up"];

describe("prompt text", () => {
  it("writes RAGEN's instruction and turn messages", () => {
    expect(instructionText("Rules.", ACTIONS, 3)).toBe(
      'Rules.\nYour available actions are: Left, Down, Right, Up.\nYou can make up to 3 actions, separated by the action separator "||"\n',
    );
    expect(instructionText("Free.", null, 2)).not.toContain("available actions");
    expect(turnText(2, "P_\n_G", 7, format)).toBe(
      "Turn 2:\nState:\nP_\n_G\nYou have 7 actions left. Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text. Strictly follow this format. Max response length: 100 words (tokens).",
    );
    expect(turnText(1, "s", 1, { ...format, enableThinking: false })).toContain(
      "Always output: <answer> [your answer] </answer> with no extra text.",
    );
  });

  it("prints rewards as Python does", () => {
    expect(formatReward(0)).toBe("0.0");
    expect(formatReward(1)).toBe("1.0");
    expect(formatReward(-0.1)).toBe("-0.1");
    expect(formatReward(1 + -0.1)).toBe("0.9");
  });

  it("puts the reward before the next turn and keeps only the history window", () => {
    const turns = [
      { observation: "A", actionsLeft: 10, response: "r1</think>", reward: 0 },
      { observation: "B", actionsLeft: 9, response: "r2</think>", reward: -0.1 },
      { observation: "C", actionsLeft: 8 },
    ];
    const all = buildChatMessages("INSTR\n", turns, format);
    expect(all.map((m) => m.role)).toEqual(["system", "user", "assistant", "user", "assistant", "user"]);
    expect(all[1]!.content).toMatch(/^INSTR\n\nTurn 1:\nState:\nA\n/);
    expect(all[2]!.content).toBe("<think>r1</think>");
    expect(all[5]!.content).toMatch(/^Reward:\n-0.1\n\nTurn 3:\nState:\nC\nYou have 8 actions left/);
    const windowed = buildChatMessages("INSTR\n", turns, { ...format, historyWindow: 2 });
    expect(windowed.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(windowed[1]!.content).toMatch(/^INSTR\n\nTurn 2:\nState:\nB/);
  });
});

describe("parseResponse", () => {
  const options = { actions: ACTIONS, maxActionsPerTurn: 3 };

  it("takes the first think/answer match across lines and maps names case-insensitively", () => {
    const parsed = parseResponse(
      "<think> go\nright </think>\n <answer> right || DOWN </answer><answer>Up</answer>",
      options,
    );
    expect(parsed).toEqual({
      think: "go\nright",
      answer: "right || DOWN",
      actions: ["Right", "Down"],
      droppedCount: 0,
      truncatedCount: 0,
      formatOk: true,
    });
    expect(deservesFormatPenalty(parsed)).toBe(false);
  });

  it("drops unknown names and empties, cuts actions beyond the limit, and says which is which", () => {
    const parsed = parseResponse("<think></think><answer>Left|| ||Jump||Up||Down||Left</answer>", options);
    expect(parsed.actions).toEqual(["Left", "Up"]);
    expect(parsed.droppedCount).toBe(1); // Jump
    expect(parsed.truncatedCount).toBe(2); // Down, Left
    expect(deservesFormatPenalty(parsed)).toBe(true); // for Jump
  });

  it("cuts actions beyond the limit without a penalty, as RAGEN does, unless asked to penalise them", () => {
    const parsed = parseResponse("<think>x</think><answer>Left || Up || Down || Right</answer>", options);
    expect(parsed.actions).toEqual(["Left", "Up", "Down"]);
    expect(parsed.truncatedCount).toBe(1);
    expect(deservesFormatPenalty(parsed)).toBe(false);
    expect(deservesFormatPenalty(parsed, { penalizeExtraActions: true })).toBe(true);
  });

  it("treats missing tags as a format failure, never an error", () => {
    for (const text of [
      "",
      "Right",
      "<answer>Right</answer>",
      "<think>x</think> <answer>Right",
      "\u0000<think>",
    ]) {
      const parsed = parseResponse(text, options);
      expect(parsed.formatOk).toBe(false);
      expect(parsed.actions).toEqual([]);
      expect(deservesFormatPenalty(parsed)).toBe(true);
    }
  });

  it("penalises an answer with no valid action", () => {
    expect(deservesFormatPenalty(parseResponse("<think>a</think><answer> </answer>", options))).toBe(true);
  });

  it("keeps free-form actions as written and reads answer-only responses when thinking is off", () => {
    expect(
      parseResponse("<think>t</think><answer>search[red shoes] || click[b1]</answer>", {
        actions: null,
        maxActionsPerTurn: 5,
      }).actions,
    ).toEqual(["search[red shoes]", "click[b1]"]);
    const noThink = parseResponse("<answer>up</answer>", { ...options, enableThinking: false });
    expect(noThink).toMatchObject({ formatOk: true, think: "", actions: ["Up"] });
  });
});

describe("parseResponse on hostile output", () => {
  // RAGEN's patterns, as the reference the linear scanner must agree with.
  const WITH_THINK = /<think>(.*?)<\/think>\s*<answer>(.*?)<\/answer>/s;
  const ANSWER_ONLY = /<answer>(.*?)<\/answer>/s;
  const PIECES = ["<think>", "</think>", "<answer>", "</answer>", " ", "\n", "Up", "||", "a", "<", ">"];

  /** A deterministic stream of random responses made of tag pieces. */
  function* responses(count: number): Generator<string> {
    let state = 12345;
    const next = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 2 ** 32;
    };
    for (let n = 0; n < count; n++) {
      const length = Math.floor(next() * 14);
      yield Array.from({ length }, () => PIECES[Math.floor(next() * PIECES.length)]).join("");
    }
  }

  it("finds exactly the regex's first match, with and without thinking", () => {
    for (const text of responses(20_000)) {
      for (const enableThinking of [true, false]) {
        const parsed = parseResponse(text, { actions: null, maxActionsPerTurn: 5, enableThinking });
        const match = (enableThinking ? WITH_THINK : ANSWER_ONLY).exec(text);
        expect(parsed.formatOk, text).toBe(match !== null);
        if (match === null) continue;
        expect(parsed.think, text).toBe(enableThinking ? match[1]!.trim() : "");
        expect(parsed.answer, text).toBe((enableThinking ? match[2]! : match[1]!).trim());
      }
    }
  });

  it("parses a megabyte of repeated tags in linear time (the regex takes minutes)", () => {
    const hostile = [
      "<think>".repeat(150_000),
      `<think>${"</think> ".repeat(120_000)}`,
      `<think>a</think>${"<answer>".repeat(130_000)}`,
      `${"<answer>".repeat(130_000)}</answer>`,
    ];
    const start = performance.now();
    for (const text of hostile) {
      expect(text.length).toBeGreaterThan(1_000_000);
      parseResponse(text, { actions: ["Up"], maxActionsPerTurn: 2 });
      parseResponse(text, { actions: ["Up"], maxActionsPerTurn: 2, enableThinking: false });
    }
    // A generous bound: linear parsing takes milliseconds, the quadratic regex about a minute per text.
    expect(performance.now() - start).toBeLessThan(5_000);
  });
});
