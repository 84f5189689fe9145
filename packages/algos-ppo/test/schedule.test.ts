import { describe, expect, it } from "vitest";
import { learningRateFactor, scheduleNeedsRunLength, warmupFactor } from "../src/schedule.js";

const base = { schedule: "constant", warmupSteps: 0, warmupRatio: 0, totalUpdates: 4 } as const;
/** Update u's step j of 2 (the optimiser has taken 2u + j before it). */
const at = (update: number, stepInUpdate: number) => ({
  optimizerSteps: 2 * update + stepInUpdate,
  update,
  stepInUpdate,
  stepsInUpdate: 2,
});

describe("learningRateFactor", () => {
  it("is 1 with a constant rate and no warm-up, and warmupFactor with lrWarmupSteps", () => {
    expect(learningRateFactor(base, at(0, 0))).toBe(1);
    expect(learningRateFactor({ ...base, warmupSteps: 3 }, at(0, 1))).toBe(warmupFactor(1, 3));
    expect(learningRateFactor({ ...base, warmupSteps: 3 }, at(0, 1))).toBe(0.5);
  });

  it("decays along a cosine over the run's updates, each update's steps spread over it", () => {
    const cosine = { ...base, schedule: "cosine" } as const;
    // Eight steps over four updates: step k starts at share k / 8.
    const factors = [0, 1, 2, 3].flatMap((u) => [0, 1].map((j) => learningRateFactor(cosine, at(u, j))));
    factors.forEach((f, k) => {
      expect(f, `step ${k}`).toBeCloseTo((1 + Math.cos((Math.PI * k) / 8)) / 2, 12);
    });
    // An update that takes four steps instead still spans one quarter of the run.
    const busy = { optimizerSteps: 0, update: 1, stepInUpdate: 2, stepsInUpdate: 4 };
    expect(learningRateFactor(cosine, busy)).toBeCloseTo((1 + Math.cos(Math.PI * (1.5 / 4))) / 2, 12);
  });

  it("warms up over a share of the run when lrWarmupSteps is 0, and lrWarmupSteps wins when set", () => {
    const ratio = { ...base, warmupRatio: 0.5 };
    // Half the run is four steps: they end at shares 1/8 .. 4/8, so run at 1/4, 1/2, 3/4, 1.
    expect([0, 1, 2, 3].map((k) => learningRateFactor(ratio, at(k >> 1, k & 1)))).toEqual([
      0.25, 0.5, 0.75, 1,
    ]);
    expect(learningRateFactor(ratio, at(3, 1))).toBe(1);
    expect(learningRateFactor({ ...ratio, warmupSteps: 1 }, at(0, 0))).toBe(0.5);
  });

  it("says which schedules need the run's length", () => {
    expect(scheduleNeedsRunLength(base)).toBe(false);
    expect(scheduleNeedsRunLength({ ...base, schedule: "cosine" })).toBe(true);
    expect(scheduleNeedsRunLength({ ...base, warmupRatio: 0.1 })).toBe(true);
    expect(scheduleNeedsRunLength({ ...base, warmupRatio: 0.1, warmupSteps: 5 })).toBe(false);
  });
});
