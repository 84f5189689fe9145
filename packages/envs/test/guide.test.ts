import { afterEach, describe, expect, it } from "vitest";
import {
  createEnv,
  type Env,
  type FrozenLakeEnv,
  getEnvSpec,
  guideAction,
  guidePlan,
  guidePlansAhead,
  oracleAction,
  Rng,
  registerEnv,
  type StepResult,
  thoughtFor,
  unregisterEnv,
} from "../src/index.js";

interface LineConfig {
  length: number;
}

const lineSchema = {
  type: "object",
  additionalProperties: false,
  properties: { length: { type: "integer", minimum: 1, maximum: 20, default: 4 } },
};

/** Walk a line to its end: Forward moves on, Back moves back. */
class LineEnv implements Env<LineConfig> {
  readonly name: string;
  readonly actions = ["Forward", "Back"];
  readonly instructions = "Walk forward to the end of the line.";
  position = 0;
  done = true;
  constructor(
    readonly config: LineConfig,
    name = "line",
  ) {
    this.name = name;
  }
  reset(_seed: number): string {
    this.position = 0;
    this.done = false;
    return this.render();
  }
  step(action: string): StepResult {
    const name = action.trim().toLowerCase();
    const valid = !this.done && (name === "forward" || name === "back");
    if (valid) this.position = Math.max(0, this.position + (name === "forward" ? 1 : -1));
    if (valid) this.done = this.position >= this.config.length;
    return {
      observation: this.render(),
      reward: this.done ? 1 : 0,
      done: this.done,
      info: { success: this.done, actionIsValid: valid, actionIsEffective: valid },
    };
  }
  render(): string {
    return `at ${this.position} of ${this.config.length}`;
  }
  renderSvg(): string {
    return `<svg xmlns="http://www.w3.org/2000/svg"><text>${this.position}</text></svg>`;
  }
  availableActions(): string[] {
    return [...this.actions];
  }
}

describe("an env's guide and thoughts", () => {
  afterEach(() => {
    unregisterEnv("line");
    unregisterEnv("line-plain");
  });

  it("uses a registered env's own guide and thought template", () => {
    registerEnv("line", (config: LineConfig) => new LineEnv(config), lineSchema, {
      oracle: () => "Back",
      guide: (env, _rng, count) =>
        Array.from({ length: Math.min(count, env.config.length - env.position) }, () => "Forward"),
      guidePlansAhead: true,
      thought: (env, actions, fromGuide) =>
        fromGuide
          ? `The end is ${env.config.length - env.position} steps on, so ${actions.join(" and ")}.`
          : `Maybe ${actions[0]}.`,
    });
    const env = createEnv<LineEnv>("line");
    env.reset(0);
    env.step("Forward");
    const rng = new Rng(0, "test");
    expect(guidePlan(env, rng, 2)).toEqual(["Forward", "Forward"]);
    expect(guidePlan(env, rng, 9)).toEqual(["Forward", "Forward", "Forward"]);
    expect(guideAction(env, rng)).toBe("Forward");
    expect(guidePlansAhead("line")).toBe(true);
    expect(thoughtFor(env, ["Forward", "Forward"], true)).toBe(
      "The end is 3 steps on, so Forward and Forward.",
    );
    expect(thoughtFor(env, "Back")).toBe("Maybe Back.");
  });

  it("falls back to the oracle's one action and to 'I choose X.' without a guide or a template", () => {
    registerEnv("line-plain", (config: LineConfig) => new LineEnv(config, "line-plain"), lineSchema, {
      oracle: () => "Forward",
    });
    const env = createEnv<LineEnv>("line-plain");
    env.reset(0);
    expect(guidePlan(env, new Rng(0, "test"), 3)).toEqual(["Forward"]);
    expect(guideAction(env, new Rng(0, "test"))).toBe("Forward");
    expect(guidePlansAhead("line-plain")).toBe(false);
    expect(thoughtFor(env, ["Back", "Forward"], true)).toBe("I choose Back.");
    expect(thoughtFor(env, [])).toBe("I choose .");
  });

  it("needs an oracle to fall back on", () => {
    registerEnv("line-plain", (config: LineConfig) => new LineEnv(config, "line-plain"), lineSchema);
    const env = createEnv("line-plain");
    env.reset(0);
    expect(() => guidePlan(env, new Rng(0, "test"), 1)).toThrow(/has no oracle policy/);
  });

  it("registers the built-in envs' guides and templates in their specs", () => {
    expect(
      Object.fromEntries(
        ["frozenlake", "bandit", "sokoban", "countdown", "webshop"].map((name) => {
          const spec = getEnvSpec(name);
          return [
            name,
            [spec.guide !== undefined, spec.guidePlansAhead === true, spec.thought !== undefined],
          ];
        }),
      ),
    ).toEqual({
      frozenlake: [true, true, true],
      bandit: [false, false, true],
      sokoban: [true, false, true],
      countdown: [false, false, false],
      webshop: [true, false, true],
    });
    // Countdown: the oracle's answer, with the plain thought.
    const countdown = createEnv("Countdown");
    countdown.reset(1);
    const answer = guideAction(countdown, new Rng(0, "test"));
    expect(answer).toBe(oracleAction(countdown, new Rng(0, "test")));
    expect(thoughtFor(countdown, answer, true)).toBe(`I choose ${answer}.`);
  });

  it("words Bandit's thought with no word pair of FrozenLake's, so one env's updates do not leak into the other", () => {
    const pairs = (text: string) => {
      const words = text
        .toLowerCase()
        .split(/[^a-z]+/)
        .filter(Boolean);
      return new Set(words.slice(1).map((word, i) => `${words[i]} ${word}`));
    };
    const frozenLake = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    const frozenLakePairs = new Set<string>();
    for (let seed = 0; seed < 20; seed++) {
      frozenLake.reset(seed);
      for (const fromGuide of [true, false]) {
        for (const pair of pairs(thoughtFor(frozenLake, ["Up", "Left"], fromGuide)))
          frozenLakePairs.add(pair);
      }
    }
    // The wording the FrozenLake drills of earlier warm starts used, which a model built on them keeps.
    for (const pair of pairs("The ice is slippery, so I try up.")) frozenLakePairs.add(pair);
    const bandit = createEnv("Bandit");
    bandit.reset(0);
    expect(thoughtFor(bandit, "Dragon")).toBe(
      "Dragon sounds like the arm with the bigger payoff: pick Dragon.",
    );
    const shared = [...pairs(thoughtFor(bandit, "Dragon"))].filter((pair) => frozenLakePairs.has(pair));
    expect(shared).toEqual([]);
  });
});
