import { describe, expect, it } from "vitest";
import { createEnv, type Env, listEnvs, MAX_ACTION_LENGTH, readAction } from "../src/index.js";

const MB = 1 << 20;

/** Long strings that make backtracking parsers, tokenizers and searches do quadratic work. */
const HUGE_ACTIONS: Record<string, string> = {
  "plain letters": "x".repeat(MB),
  "no closing bracket": `search[${"a".repeat(MB)}`,
  "only opening brackets": "[".repeat(MB),
  "only closing brackets": "]".repeat(MB),
  "alternating brackets": "[]".repeat(MB / 2),
  "click and brackets": `click[${"[".repeat(MB)}`,
  "a valid action padded": `search[${"shoes ".repeat(MB / 6)}]`,
  "many separators": "Up || ".repeat(MB / 6),
  "words and spaces": "red shoe ".repeat(MB / 9),
  "open parentheses": "(".repeat(MB),
  "digits and operators": "1+".repeat(MB / 2),
  "deep tags": "<answer>".repeat(MB / 8),
  "whitespace around a valid name": `${" ".repeat(MB)}Up${" ".repeat(MB)}`,
  "astral characters": "💥".repeat(MB / 2),
};

// Generous for a shared CI machine; the quadratic parse took about a minute on 1 MB.
const STEP_LIMIT_MS = 50;

function timedStep(env: Env, action: unknown): { ms: number; result: ReturnType<Env["step"]> } {
  const start = performance.now();
  const result = env.step(action as string);
  return { ms: performance.now() - start, result };
}

describe("every registered env steps through hostile megabyte actions quickly", () => {
  for (const name of listEnvs()) {
    it(name, () => {
      const env = createEnv(name);
      // Warm up so the first step's compilation does not count against the limit.
      env.reset(0);
      env.step("warm-up");
      for (const [label, action] of Object.entries(HUGE_ACTIONS)) {
        env.reset(1);
        const { ms, result } = timedStep(env, action);
        expect(result.info.actionIsValid, `${name}: ${label}`).toBe(false);
        expect(result.reward, `${name}: ${label}`).toBe(0);
        expect(ms, `${name}: ${label} took ${ms.toFixed(1)} ms`).toBeLessThan(STEP_LIMIT_MS);
      }
    });
  }
});

describe("every registered env treats a non-string action as invalid and never throws", () => {
  const throwing = {
    toString(): string {
      throw new Error("hostile toString");
    },
    valueOf(): number {
      throw new Error("hostile valueOf");
    },
  };
  const values: Record<string, unknown> = {
    "an object whose toString throws": throwing,
    "a symbol": Symbol("Up"),
    "a proxy that throws on every access": new Proxy(
      {},
      {
        get() {
          throw new Error("hostile proxy");
        },
      },
    ),
    "an object without a prototype": Object.create(null),
    null: null,
    undefined: undefined,
    "a number": 1,
    "a bigint": 10n,
    "an array": ["Up"],
    "a function": () => "Up",
  };
  for (const name of listEnvs()) {
    it(name, () => {
      const env = createEnv(name);
      for (const [label, action] of Object.entries(values)) {
        env.reset(2);
        let result: ReturnType<Env["step"]> | undefined;
        expect(() => {
          result = env.step(action as string);
        }, `${name}: ${label}`).not.toThrow();
        expect(result!.info.actionIsValid, `${name}: ${label}`).toBe(false);
        expect(result!.reward, `${name}: ${label}`).toBe(0);
        expect(() => env.render()).not.toThrow();
        expect(() => env.renderSvg()).not.toThrow();
      }
    });
  }
});

describe("readAction", () => {
  it("passes strings up to the limit and refuses longer ones and non-strings", () => {
    expect(readAction("Up")).toBe("Up");
    expect(readAction("x".repeat(MAX_ACTION_LENGTH))).toHaveLength(MAX_ACTION_LENGTH);
    expect(readAction("x".repeat(MAX_ACTION_LENGTH + 1))).toBeNull();
    expect(readAction(42)).toBeNull();
    expect(readAction({ toString: () => "Up" })).toBeNull();
    expect(readAction(undefined)).toBeNull();
  });
});
