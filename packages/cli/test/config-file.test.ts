import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UsageError } from "../src/commands/usage.js";
import { readConfigFile } from "../src/job/config-file.js";
import { parseJobArgs, resolveJobConfig } from "../src/job/job-cli.js";

const dir = mkdtempSync(join(tmpdir(), "ragen-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const resolveWith = (...args: string[]) =>
  resolveJobConfig(parseJobArgs(args, { positionalFile: true }), { cwd: dir });

describe("config files", () => {
  it("reads nested YAML fields, lists in either spelling, and JSON", () => {
    const yaml = file(
      "run.yaml",
      "steps: 7\nenvs: [Bandit, BanditTest]\nvalidation:\n  envs: Bandit,BanditReversed\nstarpo:\n  actorLr: 1e-5\n",
    );
    const config = resolveWith(yaml);
    expect(config.steps).toBe(7);
    expect(config.envs).toEqual(["Bandit", "BanditTest"]);
    expect(config.validation.envs).toEqual(["Bandit", "BanditReversed"]);
    expect(config.starpo.actorLr).toBe(1e-5);
    // Defaults fill what the file leaves out; relative paths mean the folder the command was typed in.
    expect(config.rollout.maxTurns).toBe(5);
    expect(config.outDir).toBe(join(dir, "runs/quest"));

    const json = file("run.json", JSON.stringify({ steps: 2, train: { groupSize: 2 } }));
    expect(resolveWith(json)).toMatchObject({ steps: 2, train: { groupSize: 2, envGroups: 8 } });
    expect(resolveWith(file("empty.yaml", "# nothing set\n")).steps).toBe(18);
  });

  it("lets key=value overrides after the file win, field by field", () => {
    const yaml = file("over.yaml", "steps: 7\ntrain:\n  envGroups: 4\n  groupSize: 2\n");
    const config = resolveWith(yaml, "train.groupSize=3");
    expect(config.train).toMatchObject({ envGroups: 4, groupSize: 3 });
    expect(config.steps).toBe(7);
  });

  it("names the file, the line and the field of every bad value", () => {
    const bad = file("bad.yaml", "steps: 7\ntrain:\n  envGroups: 0\nrollout:\n  temprature: 1\n");
    const error = () => resolveWith(bad);
    expect(error).toThrow(UsageError);
    expect(error).toThrow(/bad\.yaml:3: train\.envGroups: must be >= 1/);
    expect(error).toThrow(/bad\.yaml:5: rollout\.temprature: unknown field \(allowed: .*"temperature"/);
    // A bad override is the command line's, not the file's.
    expect(() => resolveWith(file("ok.yaml", "steps: 1\n"), "steps=-1")).toThrow(
      /command line: steps: must be >= 0/,
    );
    const groups = file("groups.yaml", "envs: [FrozenLake, Bandit, BanditTest]\n");
    expect(() => resolveWith(groups)).toThrow(/must be a multiple of the number of envs \(3\)/);
    const weighted = file(
      "weighted.yaml",
      "train:\n  envGroups: 8\n  groupsPerEnv: {FrozenLakeGridCoord: 6, Bandit: 1}\n",
    );
    expect(() => resolveWith(weighted)).toThrow(/weighted\.yaml:3: train\.groupsPerEnv: the groups sum to 7/);
  });

  it("says what is wrong with a file that is missing, not YAML, or not a mapping", () => {
    expect(() => resolveWith("nowhere.yaml")).toThrow(/nowhere\.yaml: no such config file/);
    expect(() => readConfigFile(file("broken.yaml", "steps: 1\ntrain: [1, 2\n"))).toThrow(
      /broken\.yaml:\d+:\d+: not valid YAML or JSON/,
    );
    expect(() => readConfigFile(file("list.yaml", "- steps\n- 3\n"))).toThrow(
      /must be a mapping.*not a list/,
    );
    expect(() => readConfigFile(file("twice.yaml", "steps: 1\nsteps: 2\n"))).toThrow(/twice\.yaml:2:/);
    expect(() => readConfigFile(dir)).toThrow(/is a folder/);
  });
});

describe("job arguments", () => {
  it("finds the config file as the first argument, config=<path> or --config <path>", () => {
    expect(parseJobArgs(["a.yaml", "steps=2"], { positionalFile: true })).toEqual({
      configFile: "a.yaml",
      overrides: ["steps=2"],
      help: false,
    });
    expect(parseJobArgs(["steps=2", "config=b.yaml"]).configFile).toBe("b.yaml");
    expect(parseJobArgs(["--config", "c.yaml"]).configFile).toBe("c.yaml");
    expect(parseJobArgs(["--config=d.yaml", "--help"])).toMatchObject({ configFile: "d.yaml", help: true });
  });

  it("refuses two files, unknown options and words that are not key=value", () => {
    expect(() => parseJobArgs(["a.yaml", "config=b.yaml"], { positionalFile: true })).toThrow(
      /two config files/,
    );
    expect(() => parseJobArgs(["--steps", "3"])).toThrow(/unknown option --steps/);
    expect(() => parseJobArgs(["a.yaml"])).toThrow(/"a\.yaml" is not key=value/);
    expect(() => parseJobArgs(["steps=1", "x.yaml"], { positionalFile: true })).toThrow(/not key=value/);
    expect(() => parseJobArgs(["--config"])).toThrow(/needs a file path/);
  });
});
