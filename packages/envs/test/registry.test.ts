import { afterEach, describe, expect, it } from "vitest";
import {
  assertEnvConforms,
  ConfigError,
  checkEnv,
  createEnv,
  type Env,
  EnvConfigError,
  EnvConformanceError,
  getEnvSpec,
  listEnvs,
  listPresets,
  registerEnv,
  resolveEnvConfig,
  type StepResult,
  UnknownEnvError,
  unregisterEnv,
} from "../src/index.js";

interface CounterConfig {
  target: number;
  mode: "up" | "down";
}

const counterSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    target: { type: "integer", minimum: 1, maximum: 100, default: 3 },
    mode: { type: "string", enum: ["up", "down"], default: "up" },
  },
};

/** A tiny env written the way another project would, to test the registry and the checker. */
class CounterEnv implements Env<CounterConfig> {
  readonly name = "counter";
  readonly actions = ["Inc", "Stay"] as const;
  readonly instructions = "Say Inc until the counter reaches the target.";
  count = 0;
  done = true;
  started = false;
  constructor(
    readonly config: CounterConfig,
    private readonly breakOn?: "hostile" | "determinism",
  ) {}
  reset(seed: number): string {
    this.count = this.breakOn === "determinism" ? Math.floor(Math.random() * 1000) : Math.abs(seed) % 2;
    this.done = false;
    this.started = true;
    return this.render();
  }
  step(action: string): StepResult {
    if (this.done) return this.result(0, false);
    if (this.breakOn === "hostile" && action.length > 1000) throw new Error("too long");
    const name = action.trim().toLowerCase();
    if (name !== "inc" && name !== "stay") return this.result(0, false);
    if (name === "inc") this.count++;
    this.done = this.count >= this.config.target;
    return this.result(this.done ? 1 : 0, true, name === "inc");
  }
  private result(reward: number, valid: boolean, effective = false): StepResult {
    return {
      observation: this.render(),
      reward,
      done: this.done,
      info: { success: this.done && valid, actionIsValid: valid, actionIsEffective: effective },
    };
  }
  render(): string {
    return this.started ? `count ${this.count}` : "";
  }
  renderSvg(): string {
    return `<svg xmlns="http://www.w3.org/2000/svg"><text>${this.count}</text></svg>`;
  }
  availableActions(): string[] {
    return [...this.actions];
  }
}

describe("registry", () => {
  afterEach(() => {
    unregisterEnv("counter");
    unregisterEnv("counter-broken");
    unregisterEnv("counter-random");
  });

  it("lists the five built-in envs", () => {
    expect(listEnvs()).toEqual(
      expect.arrayContaining(["frozenlake", "bandit", "sokoban", "countdown", "webshop"]),
    );
  });

  it("registers, validates and creates another project's env", () => {
    registerEnv("counter", (config: CounterConfig) => new CounterEnv(config), counterSchema, {
      description: "counts",
      oracle: () => "Inc",
      presets: { CounterFive: { config: { target: 5 }, maxActionsPerTraj: 5, description: "to five" } },
    });
    expect(listEnvs()).toContain("counter");
    expect(listPresets().CounterFive).toMatchObject({ env: "counter", maxActionsPerTraj: 5 });
    expect(createEnv<CounterEnv>("counter").config).toEqual({ target: 3, mode: "up" });
    expect(createEnv<CounterEnv>("CounterFive").config).toEqual({ target: 5, mode: "up" });
    expect(createEnv<CounterEnv>("CounterFive", { target: 2 }).config.target).toBe(2);
    expect(getEnvSpec("CounterFive").name).toBe("counter");
    expect(assertEnvConforms("counter").ok).toBe(true);
  });

  it("refuses duplicate names and bad names", () => {
    registerEnv("counter", (c: CounterConfig) => new CounterEnv(c), counterSchema);
    expect(() => registerEnv("counter", (c: CounterConfig) => new CounterEnv(c), counterSchema)).toThrow(
      /already registered/,
    );
    expect(() => registerEnv("Bad Name", (c: CounterConfig) => new CounterEnv(c), counterSchema)).toThrow(
      /lowercase/,
    );
  });

  it("names every bad field of a config and the allowed values", () => {
    registerEnv("counter", (c: CounterConfig) => new CounterEnv(c), counterSchema);
    let error: unknown;
    try {
      createEnv("counter", { target: 0, mode: "sideways", colour: "red" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EnvConfigError);
    const issues = (error as EnvConfigError).issues;
    expect(issues.map((i) => i.field).sort()).toEqual(["colour", "mode", "target"]);
    expect(issues.find((i) => i.field === "mode")?.allowed).toEqual(["up", "down"]);
    expect(issues.find((i) => i.field === "colour")?.allowed).toEqual(["target", "mode"]);
    const message = (error as Error).message;
    expect(message).toContain("target: must be >= 1 (got 0)");
    expect(message).toContain(
      'mode: must be one of the listed values (got "sideways") (allowed: "up", "down")',
    );
    expect(message).toContain('colour: unknown field (allowed: "target", "mode")');
    expect(() => createEnv("counter", "target=3" as unknown as object)).toThrow(/must be an object/);
    expect(() => createEnv("counter", [] as unknown as object)).toThrow(/must be an object/);
  });

  it("does not mutate the caller's config when filling defaults", () => {
    registerEnv("counter", (c: CounterConfig) => new CounterEnv(c), counterSchema);
    const mine = { target: 4 };
    const resolved = resolveEnvConfig<CounterConfig>("counter", mine);
    expect(mine).toEqual({ target: 4 });
    expect(resolved).toEqual({ target: 4, mode: "up" });
  });

  it("says which envs exist when a name is unknown", () => {
    expect(() => createEnv("frozen-lake")).toThrow(UnknownEnvError);
    expect(() => createEnv("frozen-lake")).toThrow(/Registered envs: .*frozenlake/);
  });

  it("rejects a preset whose config breaks the schema at registration", () => {
    expect(() =>
      registerEnv("counter", (c: CounterConfig) => new CounterEnv(c), counterSchema, {
        presets: { CounterBad: { config: { target: 1000 }, maxActionsPerTraj: 1, description: "" } },
      }),
    ).toThrow(EnvConfigError);
  });
});

describe("checkEnv finds broken envs", () => {
  afterEach(() => {
    unregisterEnv("counter-broken");
    unregisterEnv("counter-random");
  });

  it("reports an env that throws on hostile input", () => {
    registerEnv("counter-broken", (c: CounterConfig) => new CounterEnv(c, "hostile"), counterSchema);
    const report = checkEnv("counter-broken", { seeds: [0] });
    expect(report.ok).toBe(false);
    expect(report.problems.join("\n")).toMatch(/threw: too long/);
    expect(() => assertEnvConforms("counter-broken", { seeds: [0] })).toThrow(EnvConformanceError);
  });

  it("reports an env whose randomness does not come from the seed", () => {
    registerEnv("counter-random", (c: CounterConfig) => new CounterEnv(c, "determinism"), counterSchema);
    const report = checkEnv("counter-random", { seeds: [0, 1] });
    expect(report.problems.join("\n")).toMatch(/diverged|did not reproduce/);
  });
});

describe("parseOverrides", () => {
  it("builds nested objects and parses JSON values", async () => {
    const { parseOverrides } = await import("../src/index.js");
    expect(
      parseOverrides(["size=6", "isSlippery=false", "name=Dragon", "dimRoom=[8,8]", "a.b.c=0.5"]),
    ).toEqual({
      size: 6,
      isSlippery: false,
      name: "Dragon",
      dimRoom: [8, 8],
      a: { b: { c: 0.5 } },
    });
    expect(() => parseOverrides(["size"])).toThrow(/not key=value/);
    expect(() => parseOverrides(["__proto__.x=1"])).toThrow(/bad key path/);
    expect(() => parseOverrides(["a=1", "a.b=2"])).toThrow(/a: already has a value/);
    expect(() => parseOverrides(["size"])).toThrow(ConfigError);
  });
});
