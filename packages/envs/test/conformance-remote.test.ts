import { describe, expect, it } from "vitest";
import { checkRemoteEnv, createEnv, InProcessAsyncEnv, type StepResult } from "../src/index.js";

/** A faithful server's client that records being closed. */
class PromisedEnv extends InProcessAsyncEnv {
  closed = false;
  async close(): Promise<void> {
    this.closed = true;
  }
}

describe("checkRemoteEnv", () => {
  for (const tag of ["FrozenLake", "Bandit", "SimpleSokoban", "Countdown", "WebShop"]) {
    it(`passes ${tag} played through promises, and closes every session it opened`, async () => {
      const opened: PromisedEnv[] = [];
      const report = await checkRemoteEnv(
        () => {
          const env = new PromisedEnv(createEnv(tag));
          opened.push(env);
          return env;
        },
        { seeds: [0, 42] },
      );
      expect(report.problems).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.steps).toBeGreaterThan(50);
      expect(opened.length).toBeGreaterThan(4);
      expect(opened.every((env) => env.closed)).toBe(true);
    });
  }

  it("finds a server that errors on a hostile action, one that is not deterministic, and a wrong name", async () => {
    let sessions = 0;
    class Broken extends PromisedEnv {
      private readonly id = sessions++;
      override async step(action: string): Promise<StepResult> {
        if (action.length > 5000) throw new Error("413 request body too large");
        const result = this.env.step(action);
        return { ...result, reward: result.reward + this.id * 1e-3 };
      }
    }
    const report = await checkRemoteEnv(() => new Broken(createEnv("Bandit")), {
      name: "FrozenLake",
      seeds: [1],
    });
    expect(report.ok).toBe(false);
    expect(report.problems).toContain('env.name is "bandit", registered as "FrozenLake"');
    expect(report.problems.some((p) => /^step\(.*\) threw: 413 request body too large$/.test(p))).toBe(true);
    expect(report.problems).toContain("seed 1: two sessions given the same seed and actions diverged");
  });

  it("cuts hostile actions to maxActionChars, still past what an env reads", async () => {
    const longest: number[] = [];
    class Measuring extends PromisedEnv {
      override async step(action: string): Promise<StepResult> {
        longest.push(action.length);
        return this.env.step(action);
      }
    }
    const report = await checkRemoteEnv(() => new Measuring(createEnv("FrozenLake")), {
      seeds: [0],
      maxActionChars: 5000,
    });
    expect(report.problems).toEqual([]);
    expect(Math.max(...longest)).toBe(5000);
  });
});
