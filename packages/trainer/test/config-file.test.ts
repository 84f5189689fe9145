import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@ragen/envs";
import { afterAll, describe, expect, it } from "vitest";
import { parseRunArguments, readConfigFile, resolveRunSettings } from "../src/node.js";

const dir = mkdtempSync(join(tmpdir(), "ragen-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const resolveWith = async (...args: string[]) => {
  const { configFile, overrides } = parseRunArguments(args, { positionalFile: true });
  return (await resolveRunSettings({ configFile, overrides, cwd: dir, sizeModel: false })).settings;
};

describe("config files", () => {
  it("reads nested YAML fields, lists in either spelling, and JSON", async () => {
    const yaml = file(
      "run.yaml",
      "steps: 7\nenvs: [Bandit, BanditTest]\nvalidation:\n  envs: Bandit,BanditReversed\nstarpo:\n  actorLr: 1e-5\n",
    );
    const config = await resolveWith(yaml);
    expect(config.steps).toBe(7);
    expect(config.envs).toEqual(["Bandit", "BanditTest"]);
    expect(config.validation.envs).toEqual(["Bandit", "BanditReversed"]);
    expect(config.starpo.actorLr).toBe(1e-5);
    // Defaults fill what the file leaves out; relative paths mean the folder the command was typed in.
    expect(config.rollout.maxTurns).toBe(5);
    expect(config.outDir).toBe(join(dir, "runs/quest"));

    const json = file("run.json", JSON.stringify({ steps: 2, train: { groupSize: 2 } }));
    expect(await resolveWith(json)).toMatchObject({ steps: 2, train: { groupSize: 2, envGroups: 8 } });
    expect((await resolveWith(file("empty.yaml", "# nothing set\n"))).steps).toBe(18);
  });

  it("lets key=value overrides after the file win, field by field", async () => {
    const yaml = file("over.yaml", "steps: 7\ntrain:\n  envGroups: 4\n  groupSize: 2\n");
    const config = await resolveWith(yaml, "train.groupSize=3");
    expect(config.train).toMatchObject({ envGroups: 4, groupSize: 3 });
    expect(config.steps).toBe(7);
  });

  it("names the file, the line and the field of every bad value", async () => {
    const bad = file("bad.yaml", "steps: 7\ntrain:\n  envGroups: 0\nrollout:\n  temprature: 1\n");
    const error = await resolveWith(bad).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues).toContainEqual(
      expect.objectContaining({ field: "train.envGroups", source: { file: bad, line: 3 } }),
    );
    expect((error as Error).message).toMatch(/bad\.yaml:3: train\.envGroups: must be >= 1/);
    expect((error as Error).message).toMatch(
      /bad\.yaml:5: rollout\.temprature: unknown field \(allowed: .*"temperature"/,
    );
    // A bad override is the command line's, not the file's.
    await expect(resolveWith(file("ok.yaml", "steps: 1\n"), "steps=-1")).rejects.toThrow(
      /command line: steps: must be >= 0/,
    );
    const groups = file("groups.yaml", "envs: [FrozenLake, Bandit, BanditTest]\n");
    await expect(resolveWith(groups)).rejects.toThrow(/must be a multiple of the number of envs \(3\)/);
    const weighted = file(
      "weighted.yaml",
      "train:\n  envGroups: 8\n  groupsPerEnv: {FrozenLakeGridCoord: 6, Bandit: 1}\n",
    );
    await expect(resolveWith(weighted)).rejects.toThrow(
      /weighted\.yaml:3: train\.groupsPerEnv: the groups sum to 7/,
    );
  });

  it("says what is wrong with a file that is missing, not YAML, or not a mapping", async () => {
    await expect(resolveWith("nowhere.yaml")).rejects.toThrow(/nowhere\.yaml: no such config file/);
    expect(() => readConfigFile(file("broken.yaml", "steps: 1\ntrain: [1, 2\n"))).toThrow(
      /broken\.yaml:\d+: not valid YAML or JSON \(column \d+\)/,
    );
    expect(() => readConfigFile(file("list.yaml", "- steps\n- 3\n"))).toThrow(
      /must be a mapping.*not a list/,
    );
    expect(() => readConfigFile(file("twice.yaml", "steps: 1\nsteps: 2\n"))).toThrow(/twice\.yaml:2:/);
    expect(() => readConfigFile(dir)).toThrow(/is a folder/);
  });
});

describe("run arguments", () => {
  it("finds the config file as the first argument, config=<path> or --config <path>", () => {
    expect(parseRunArguments(["a.yaml", "steps=2"], { positionalFile: true })).toEqual({
      configFile: "a.yaml",
      overrides: ["steps=2"],
      help: false,
      printConfig: false,
    });
    expect(parseRunArguments(["steps=2", "config=b.yaml"]).configFile).toBe("b.yaml");
    expect(parseRunArguments(["--print-config"]).printConfig).toBe(true);
    expect(parseRunArguments(["--config", "c.yaml"]).configFile).toBe("c.yaml");
    expect(parseRunArguments(["--config=d.yaml", "--help"])).toMatchObject({
      configFile: "d.yaml",
      help: true,
    });
  });

  it("refuses two files, unknown options and words that are not key=value", () => {
    expect(() => parseRunArguments(["a.yaml", "config=b.yaml"], { positionalFile: true })).toThrow(
      /two config files/,
    );
    expect(() => parseRunArguments(["--steps", "3"])).toThrow(/unknown option --steps/);
    expect(() => parseRunArguments(["a.yaml"])).toThrow(/"a\.yaml" is not key=value/);
    expect(() => parseRunArguments(["steps=1", "x.yaml"], { positionalFile: true })).toThrow(/not key=value/);
    expect(() => parseRunArguments(["--config"])).toThrow(/needs a file path/);
    expect(() => parseRunArguments(["--config"])).toThrow(ConfigError);
  });
});

describe("hostile config files", () => {
  it("stop an alias bomb at once, naming the file", () => {
    const levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"];
    for (let i = 1; i < 9; i++) {
      const [name, below] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
      levels.push(`${name}: &${name} [${Array(9).fill(`*${below}`).join(", ")}]`);
    }
    const path = file("bomb.yaml", `${levels.join("\n")}\n`);
    const start = performance.now();
    let error: unknown;
    try {
      readConfigFile(path, "bomb.yaml");
    } catch (e) {
      error = e;
    }
    expect(performance.now() - start).toBeLessThan(2000);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues[0]).toMatchObject({ field: "", source: { file: "bomb.yaml" } });
    expect((error as ConfigError).message).toMatch(/alias/);
  });

  it("name the envs field for a tag that is no registered env or preset", async () => {
    const error = await resolveWith("envs=NoSuchEnv,Bandit").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues[0]).toMatchObject({ field: "envs", source: "command line" });
    expect((error as ConfigError).issues[0]!.allowed).toContain("Bandit");
    expect((error as ConfigError).message).toMatch(/"NoSuchEnv" is not a registered env or preset/);
    const yaml = file("val.yaml", "validation:\n  envs: [Bandit, BanditNope]\n");
    const fromFile = await resolveWith(yaml).catch((e: unknown) => e);
    expect((fromFile as ConfigError).issues[0]).toMatchObject({
      field: "validation.envs",
      source: { file: yaml, line: 2 },
    });
  });
});
