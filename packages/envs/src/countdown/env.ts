import { MAX_ACTION_LENGTH, readAction } from "../action.js";
import { EnvConfigError } from "../config.js";
import { Rng } from "../rng.js";
import { textPanelSvg } from "../svg.js";
import type { Env, StepInfo, StepResult } from "../types.js";
import { COUNTDOWN_ENV_NAME, type CountdownConfig, checkCountdownConfig } from "./config.js";
import { type CountdownInstance, generateCountdownInstance } from "./generate.js";
import { type CountdownAnswerKind, type CountdownScore, scoreCountdownAnswer } from "./score.js";

export interface CountdownStepInfo extends StepInfo {
  /** Why the answer got its reward; "ignored" for a step before reset or after the episode. */
  answerKind: CountdownAnswerKind | "ignored";
  /** The whole numbers written in the answer, left to right. */
  numbersUsed: number[];
  /** The answer's value (null when it did not parse or divided by zero). */
  value: number | null;
  /** What was wrong with the answer's syntax, if anything. */
  error: string | null;
}

/** The answer given in the episode's one step, and how it scored. */
export interface CountdownAnswer {
  text: string;
  score: CountdownScore;
}

/** RAGEN's observation: the target and the numbers as a Python list. */
export function renderCountdownPuzzle(instance: CountdownInstance): string {
  return `Target: ${instance.target}, nums: [${instance.numbers.join(", ")}]`;
}

/** Long answers are cut in the SVG, which is for people to read. */
const SVG_LINE_CHARS = 200;

function clip(text: string): string {
  return text.length > SVG_LINE_CHARS ? `${text.slice(0, SVG_LINE_CHARS)}...` : text;
}

/**
 * The score of an answer that is not read at all (not a string, or longer than MAX_ACTION_LENGTH):
 * invalid and unrewarded, even where its digits would have earned the format score.
 */
function unreadableAnswer(action: unknown): CountdownScore {
  return invalidAnswer(
    typeof action === "string"
      ? `the answer is longer than ${MAX_ACTION_LENGTH} characters`
      : "the answer is not text",
  );
}

/** An answer scored invalid and unrewarded, for `error`. */
function invalidAnswer(error: string): CountdownScore {
  return {
    reward: 0,
    kind: "invalid-expression",
    valid: false,
    numbersUsed: [],
    numbersMatch: false,
    value: null,
    error,
  };
}

function formatValue(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(8)));
}

function describeScore(score: CountdownScore, instance: CountdownInstance): string {
  switch (score.kind) {
    case "correct":
      return `${formatValue(score.value ?? instance.target)} = target (correct)`;
    case "wrong-value":
      return `${formatValue(score.value ?? Number.NaN)}, not ${instance.target} (wrong value)`;
    case "division-by-zero":
      return "division by zero";
    case "wrong-numbers":
      return `uses [${score.numbersUsed.join(", ")}], not [${instance.numbers.join(", ")}] (wrong numbers)`;
    case "invalid-expression":
      return `not an expression: ${score.error ?? "unparseable"}`;
  }
}

/**
 * Countdown: reach a target by combining every given number once with + - * / and parentheses.
 * One answer per episode, scored as RAGEN scores it (`score`, `formatScore` or 0), then done.
 *
 * Actions are free-form expressions (`actions` is null). `availableActions()` returns one example of
 * the answer format while a puzzle is open (the numbers joined by " + "), and [] otherwise.
 */
export class CountdownEnv implements Env<CountdownConfig, CountdownStepInfo> {
  readonly name = COUNTDOWN_ENV_NAME;
  readonly actions = null;
  readonly instructions: string;
  private instance: CountdownInstance | null = null;
  private finished = true;
  private observation = "";
  private answer: CountdownAnswer | null = null;

  constructor(readonly config: Readonly<CountdownConfig>) {
    checkCountdownConfig(config);
    // Fail at creation, not at the first reset, when the ranges admit no puzzle.
    if (!generateCountdownInstance(config, Rng.derive(0, "countdown"))) {
      throw new EnvConfigError(COUNTDOWN_ENV_NAME, [
        {
          field: "",
          message:
            "no solvable puzzle found within these ranges: widen minNumber..maxNumber or minTarget..maxTarget" +
            (config.requireAdditiveSolution ? ", or set requireAdditiveSolution to false" : ""),
        },
      ]);
    }
    this.instructions = [
      "You are playing Countdown. You are given a target and a list of numbers.",
      "Write one arithmetic expression that uses every number in the list exactly once and equals the target.",
      "You may use +, -, *, / (exact division, no rounding) and parentheses; no other numbers, no powers, no decimals.",
      "Answer with the expression only, without '= target'. Example: for target 20 and numbers [2, 5, 6],",
      "answer <answer>(6 - 2) * 5</answer>.",
      `Reaching the target scores ${config.score}; an expression with exactly the given numbers that misses ` +
        `scores ${config.formatScore}; anything else scores 0. You have one answer.`,
    ].join("\n");
  }

  get done(): boolean {
    return this.finished;
  }

  /** The current puzzle's target (null before the first reset). */
  get target(): number | null {
    return this.instance?.target ?? null;
  }

  /** The current puzzle's numbers, in the order shown (null before the first reset). */
  get numbers(): readonly number[] | null {
    return this.instance ? [...this.instance.numbers] : null;
  }

  /** The answer given in this episode, once given. */
  get lastAnswer(): CountdownAnswer | null {
    return this.answer;
  }

  reset(seed: number): string {
    const instance = generateCountdownInstance(this.config, Rng.derive(seed, "countdown"));
    if (!instance) {
      throw new Error(
        `countdown: no solvable puzzle found for seed ${seed}; widen the ranges (minNumber..maxNumber, ` +
          "minTarget..maxTarget) or set requireAdditiveSolution to false",
      );
    }
    this.instance = instance;
    this.finished = false;
    this.answer = null;
    this.observation = renderCountdownPuzzle(instance);
    return this.observation;
  }

  step(action: string): StepResult<CountdownStepInfo> {
    const instance = this.instance;
    if (this.finished || !instance) return this.ignoredStep();
    const text = readAction(action);
    let score: CountdownScore;
    try {
      score =
        text === null
          ? unreadableAnswer(action)
          : scoreCountdownAnswer(text, instance.numbers, instance.target, this.config);
    } catch (error) {
      // The scorer is not meant to throw; if it ever does, the answer is invalid rather than fatal.
      score = invalidAnswer(`internal error: ${(error as Error)?.message ?? String(error)}`);
    }
    // An over-long answer keeps a readable prefix; a non-string has no text to keep.
    this.answer = {
      text: text ?? (typeof action === "string" ? action.slice(0, SVG_LINE_CHARS) : ""),
      score,
    };
    this.finished = true;
    // RAGEN's wording, reward printed as Python prints it (1, 0.1, 0).
    this.observation = `Your answer get ${score.reward} points.`;
    return {
      observation: this.observation,
      reward: score.reward,
      done: true,
      info: {
        success: score.kind === "correct",
        actionIsValid: score.valid,
        // As in RAGEN: an answer that earned anything counts as effective.
        actionIsEffective: score.reward > 0,
        answerKind: score.kind,
        numbersUsed: score.numbersUsed,
        value: score.value,
        error: score.error,
      },
    };
  }

  private ignoredStep(): StepResult<CountdownStepInfo> {
    return {
      observation: this.observation,
      reward: 0,
      done: true,
      info: {
        success: false,
        actionIsValid: false,
        actionIsEffective: false,
        answerKind: "ignored",
        numbersUsed: [],
        value: null,
        error: null,
      },
    };
  }

  render(): string {
    return this.observation;
  }

  renderSvg(): string {
    const instance = this.instance;
    if (!instance) return textPanelSvg(["No puzzle yet: call reset(seed)."], { title: "Countdown" });
    const lines = [`Target:  ${instance.target}`, `Numbers: ${instance.numbers.join(", ")}`];
    if (this.answer) {
      const { text, score } = this.answer;
      lines.push(
        "",
        `Answer:  ${clip(text.trim() === "" ? "(empty)" : text.trim())}`,
        `Result:  ${clip(describeScore(score, instance))}`,
        `Reward:  ${score.reward}`,
      );
    }
    return textPanelSvg(lines, { title: "Countdown" });
  }

  availableActions(): string[] {
    if (this.finished || !this.instance) return [];
    return [this.instance.numbers.join(" + ")];
  }
}
