/**
 * The one place a run's settings are resolved. Layers, each over the one before:
 *
 *   library defaults ← named profile ← lora profile ← small-model profile ← algorithm profile ← experiment ← file ← command line
 *
 * and every field remembers which layer set it, so the saved config and `--print-config` can say so.
 */
import {
  ConfigError,
  type ConfigIssue,
  EnvConfigError,
  listEnvs,
  listPresets,
  parseList,
  parseOverrides,
  parseTagValues,
  validateConfig,
} from "@ragen/envs";
import { QWEN2_LINEAR_MODULES } from "@ragen/models";
import {
  LIBRARY_DEFAULTS,
  SECTIONS,
  SETTINGS_FIELDS,
  SIZE_LIMITS,
  settingsFields,
  type TrainingSettings,
} from "./fields.js";
import {
  ALGORITHM_PROFILES,
  autoProfile,
  canonicalProfile,
  LORA_PROFILE,
  PROFILE_ALIASES,
  PROFILES,
  type Profile,
  SMALL_MODEL_PARAMETERS,
  SMALL_MODEL_PROFILE,
} from "./profiles.js";
import { settingsSchema } from "./schema.js";

/** A config file's fields, with the line of each where known (for errors that point at it). */
export interface SettingsFile {
  path: string;
  values: Record<string, unknown>;
  lineOf?(field: string): number | undefined;
}

export interface SettingsInput {
  /** Overrides an experiment lays under the file: its common settings, an arm's own, credited to `source`. */
  experiment?: readonly { source: string; overrides: readonly string[] }[];
  file?: SettingsFile;
  /** `key=value` pairs from the command line; they win over everything. */
  overrides?: readonly string[];
  /**
   * The model's parameter count, or how to find it from the model's name: below SMALL_MODEL_PARAMETERS
   * the small-model profile applies. Without it the profile is not applied.
   */
  parameterCount?: number | ((model: string) => number | undefined | Promise<number | undefined>);
  /** Check what only training needs (envGroups a multiple of the env count). Default true. */
  training?: boolean;
}

/** Where a field's value came from: "default", "profile embedded (auto)", "file quest.yaml:12", "command line", ... */
export type SettingSource = string;

export interface ResolvedSettings {
  settings: TrainingSettings;
  /** By dotted field path ("starpo.actorLr"), in the order of the fields. */
  sources: Record<string, SettingSource>;
  /** The model's parameter count when it was known. */
  parameterCount?: number;
}

interface Layer {
  source: SettingSource;
  /** Where an error in this layer points. */
  origin?: ConfigIssue["source"];
  values: Record<string, unknown>;
  /** A file's line of a field. */
  lineOf?(field: string): number | undefined;
}

/** Resolves a run's settings; throws ConfigError naming the file, line or command line and field of each problem. */
export async function resolveSettings(input: SettingsInput = {}): Promise<ResolvedSettings> {
  const upper = userLayers(input);
  const asked = lastSet(upper, "profile") ?? LIBRARY_DEFAULTS.profile;
  const canonical = canonicalProfile(asked);
  if (canonical === undefined) throw unknownProfile(upper, asked);
  // The model and the algorithm choose profiles of their own, so read them first: with a named profile
  // (which may name a model, as RAGEN's configs do), or for `auto`, which chooses by the model, without.
  const explicit =
    canonical === "auto" ? undefined : profileLayer(`profile ${canonical}`, PROFILES[canonical]);
  const first = mergeLayers([defaultsLayer(), ...(explicit ? [explicit] : []), ...upper]).settings;
  const model = String(first.model);
  const parameterCount =
    typeof input.parameterCount === "function" ? await input.parameterCount(model) : input.parameterCount;
  const small = parameterCount !== undefined && parameterCount < SMALL_MODEL_PARAMETERS;
  const profileName = canonical === "auto" ? autoProfile(parameterCount, model) : canonical;
  const named = explicit ?? profileLayer(`profile ${profileName} (auto)`, PROFILES[profileName]);
  // The profile a run used is recorded by its own name, so the saved settings resolve the same again.
  named.values.profile = profileName;
  const algorithmProfile = ALGORITHM_PROFILES[first.algorithm as TrainingSettings["algorithm"]];
  const layers = [
    defaultsLayer(),
    named,
    ...(loraRank(first) > 0 ? [profileLayer("profile lora", LORA_PROFILE)] : []),
    ...(small ? [profileLayer("profile small-model", SMALL_MODEL_PROFILE)] : []),
    ...(algorithmProfile ? [profileLayer(`profile ${first.algorithm}`, algorithmProfile)] : []),
    ...upper.map((layer) => withProfileResolved(layer, canonical)),
  ];
  const merged = mergeLayers(layers);
  if (canonical === "auto") merged.sources.profile = `auto: ${autoReason(parameterCount, model)}`;
  let settings: TrainingSettings;
  try {
    settings = validateConfig<TrainingSettings>("settings", settingsSchema(), merged.settings);
  } catch (error) {
    if (!(error instanceof EnvConfigError)) throw error;
    throw new ConfigError(
      subjectOf(input),
      error.issues.map((issue) => locate(withReason(issue), merged.origins, layers)),
    );
  }
  checkEnvTags(settings, merged, layers, input);
  checkRolloutCombinations(settings, merged, layers, input);
  if (input.training !== false) {
    checkTrainingGroups(settings, merged, layers, input);
    checkStarPOCombinations(settings, merged, layers, input);
    const remote = remoteRolloutProblems(settings);
    if (remote.length > 0)
      throw new ConfigError(
        subjectOf(input),
        remote.map((issue) => locate(issue, merged.origins, layers)),
      );
  }
  return {
    settings: inFieldOrder(settings),
    sources: Object.fromEntries(settingsFields().map(({ path }) => [path, merged.sources[path]!])),
    ...(parameterCount === undefined ? {} : { parameterCount }),
  };
}

function userLayers(input: SettingsInput): Layer[] {
  return [
    ...(input.experiment ?? []).map((layer) => ({
      source: layer.source,
      values: coerce(parseOverrides(layer.overrides)),
    })),
    ...(input.file
      ? [
          {
            source: `file ${input.file.path}`,
            origin: { file: input.file.path },
            values: coerce(structuredClone(input.file.values)),
            ...(input.file.lineOf ? { lineOf: input.file.lineOf.bind(input.file) } : {}),
          },
        ]
      : []),
    ...(input.overrides?.length
      ? [
          {
            source: "command line",
            origin: "command line" as const,
            values: coerce(parseOverrides(input.overrides)),
          },
        ]
      : []),
  ];
}

function defaultsLayer(): Layer {
  return {
    source: "default",
    values: structuredClone(LIBRARY_DEFAULTS) as unknown as Record<string, unknown>,
  };
}

function profileLayer(source: string, profile: Profile): Layer {
  return { source, values: structuredClone(profile.settings) as Record<string, unknown> };
}

/** Text from the command line (or a file) in the shape the schema wants: lists and Tag=N maps. */
function coerce(values: Record<string, unknown>): Record<string, unknown> {
  if ("envs" in values) values.envs = parseList(values.envs);
  if ("seeds" in values) values.seeds = parseSeedList(values.seeds);
  if ("envServers" in values) values.envServers = parseEnvServers(values.envServers);
  const train = values.train as Record<string, unknown> | undefined;
  if (isPlainObject(train) && "groupsPerEnv" in train)
    train.groupsPerEnv = parseTagValues("train.groupsPerEnv", train.groupsPerEnv);
  const validation = values.validation as Record<string, unknown> | undefined;
  if (isPlainObject(validation) && "envs" in validation) validation.envs = parseList(validation.envs);
  const rollout = values.rollout as Record<string, unknown> | undefined;
  if (isPlainObject(rollout) && "servers" in rollout) rollout.servers = parseList(rollout.servers);
  const lora = values.lora as Record<string, unknown> | undefined;
  if (isPlainObject(lora) && "targetModules" in lora)
    lora.targetModules = parseLoraTargets(lora.targetModules);
  return values;
}

/** `q_proj,v_proj` as a list; `all-linear` (RAGEN's and PEFT's name for every linear module) as all seven. */
function parseLoraTargets(value: unknown): unknown {
  const list = parseList(value);
  return Array.isArray(list) && list.length === 1 && list[0] === "all-linear"
    ? [...QWEN2_LINEAR_MODULES]
    : list;
}

/** The LoRA rank the layers merged so far ask for (0 when unset or not a number: the schema judges it later). */
function loraRank(settings: Record<string, unknown>): number {
  const lora = settings.lora;
  return isPlainObject(lora) && typeof lora.rank === "number" ? lora.rank : 0;
}

interface Merged {
  settings: Record<string, unknown>;
  sources: Record<string, SettingSource>;
  /** The index of the layer that set each field. */
  origins: Record<string, number>;
}

/** Lays the layers over each other field by field (a section is merged, a value replaced). */
function mergeLayers(layers: readonly Layer[]): Merged {
  const settings: Record<string, unknown> = {};
  const sources: Record<string, SettingSource> = {};
  const origins: Record<string, number> = {};
  const set = (path: string, index: number) => {
    const layer = layers[index]!;
    const line = layer.lineOf?.(path);
    sources[path] = line === undefined ? layer.source : `${layer.source}:${line}`;
    origins[path] = index;
  };
  layers.forEach((layer, index) => {
    for (const [key, value] of Object.entries(layer.values)) {
      const section = (SECTIONS as readonly string[]).includes(key);
      if (section && isPlainObject(value) && isPlainObject(settings[key])) {
        const into = settings[key] as Record<string, unknown>;
        for (const [field, fieldValue] of Object.entries(value)) {
          into[field] = fieldValue;
          set(`${key}.${field}`, index);
        }
      } else {
        settings[key] = isPlainObject(value) && section ? { ...value } : value;
        if (section && isPlainObject(value))
          for (const field of Object.keys(value)) set(`${key}.${field}`, index);
        else set(key, index);
      }
    }
  });
  return { settings, sources, origins };
}

/** Why `auto` chose its profile, for the source of the fields it set. */
function autoReason(parameterCount: number | undefined, model: string): string {
  if (parameterCount === undefined) return `${model}'s size unknown`;
  const size = `${(parameterCount / 1e6).toFixed(1)}M parameters`;
  return `${size}, ${parameterCount < SMALL_MODEL_PARAMETERS ? "under" : "at least"} ${SMALL_MODEL_PARAMETERS / 1e6}M`;
}

/**
 * A user layer with its `profile` as the profile it names: an alias becomes its profile's name, and
 * `auto` is dropped, so the profile auto chose (and why) is what the settings record.
 */
function withProfileResolved(layer: Layer, canonical: string): Layer {
  if (!("profile" in layer.values)) return layer;
  const { profile: _, ...rest } = layer.values;
  return { ...layer, values: canonical === "auto" ? rest : { ...rest, profile: canonical } };
}

/** The last user layer's value of a top-level field. */
function lastSet(layers: readonly Layer[], key: string): unknown {
  for (let i = layers.length - 1; i >= 0; i--) if (key in layers[i]!.values) return layers[i]!.values[key];
  return undefined;
}

function unknownProfile(layers: readonly Layer[], name: unknown): ConfigError {
  const layer = [...layers].reverse().find((l) => "profile" in l.values);
  return new ConfigError("settings", [
    {
      field: "profile",
      message: `unknown profile ${JSON.stringify(name)}`,
      allowed: [...Object.keys(PROFILES), ...Object.keys(PROFILE_ALIASES)],
      ...sourceOf(layer, "profile"),
    },
  ]);
}

function sourceOf(layer: Layer | undefined, field: string): Pick<ConfigIssue, "source"> {
  if (!layer?.origin) return {};
  if (layer.origin === "command line") return { source: "command line" };
  const line = layer.lineOf?.(field);
  return { source: { file: layer.origin.file, ...(line === undefined ? {} : { line }) } };
}

/** An issue with the place its field was written, found through the layer that set it (or its section). */
function locate(issue: ConfigIssue, origins: Record<string, number>, layers: readonly Layer[]): ConfigIssue {
  const index = origins[issue.field] ?? origins[issue.field.split(".")[0]!];
  return { ...issue, ...sourceOf(index === undefined ? undefined : layers[index], issue.field) };
}

/** A refused value's message with why the field is bounded so, where fields.ts says. */
function withReason(issue: ConfigIssue): ConfigIssue {
  const why = settingsFields().find(({ path }) => path === issue.field)?.spec.why;
  const refused = issue.message !== "unknown field" && issue.message !== "is required";
  return why && refused ? { ...issue, message: `${issue.message}: ${why}` } : issue;
}

function subjectOf(input: SettingsInput): string {
  return input.file ? `config in ${input.file.path}` : "settings";
}

/**
 * Every tag in envs and validation.envs is a registered env or preset, and every tag of envServers is
 * one of them, so a typo fails before anything runs.
 */
function checkEnvTags(
  settings: TrainingSettings,
  merged: Merged,
  layers: readonly Layer[],
  input: SettingsInput,
): void {
  const known = new Set([...listEnvs(), ...Object.keys(listPresets())]);
  const issues = (
    [
      ["envs", settings.envs],
      ["validation.envs", settings.validation.envs ?? []],
    ] as const
  ).flatMap(([field, tags]) => {
    const unknown = tags.filter((tag) => !known.has(tag));
    if (unknown.length === 0) return [];
    const message = `${unknown.map((tag) => JSON.stringify(tag)).join(", ")} ${unknown.length === 1 ? "is" : "are"} not a registered env or preset`;
    return [locate({ field, message, allowed: [...known].sort() }, merged.origins, layers)];
  });
  // A server for a tag the run never plays is most likely a misspelt tag.
  const played = new Set([...settings.envs, ...(settings.validation.envs ?? [])]);
  const unplayed = Object.keys(settings.envServers ?? {}).filter((tag) => !played.has(tag));
  if (unplayed.length > 0)
    issues.push(
      locate(
        {
          field: "envServers",
          message: `${unplayed.map((tag) => JSON.stringify(tag)).join(", ")} ${unplayed.length === 1 ? "is" : "are"} not among envs or validation.envs`,
          allowed: [...played],
        },
        merged.origins,
        layers,
      ),
    );
  if (issues.length > 0) throw new ConfigError(subjectOf(input), issues);
}

/** Rollout and validation options that are each valid but refuse each other or the algorithm. */
function checkRolloutCombinations(
  settings: TrainingSettings,
  merged: Merged,
  layers: readonly Layer[],
  input: SettingsInput,
): void {
  const { rollout, validation } = settings;
  const issues: ConfigIssue[] = [];
  if (validation.samples > 1 && validation.temperature === 0)
    issues.push({
      field: "validation.samples",
      message: `${validation.samples} greedy samples (validation.temperature=0) are the same episode ${validation.samples} times: sample above temperature 0 or keep validation.samples=1`,
    });
  const episodes = validation.groupsPerEnv * (validation.envs ?? settings.envs).length * validation.samples;
  if (episodes > SIZE_LIMITS.rolloutsPerStep)
    issues.push({
      field: "validation.samples",
      message: `${validation.groupsPerEnv} seeds per env x ${validation.samples} samples make ${episodes} validation episodes; at most ${SIZE_LIMITS.rolloutsPerStep} fit one batch`,
    });
  const dropsTurns = rollout.historyWindow !== null && rollout.historyWindow < rollout.maxTurns;
  if (input.training !== false && settings.algorithm === "apo" && dropsTurns)
    issues.push({
      field: "rollout.historyWindow",
      message: `${rollout.historyWindow} turns of ${rollout.maxTurns} split an episode into several training sequences, and A*-PO regresses one log-ratio summed over the whole episode: set rollout.historyWindow=null (or at least rollout.maxTurns) with algorithm=apo`,
    });
  if (issues.length > 0)
    throw new ConfigError(
      subjectOf(input),
      issues.map((issue) => locate(issue, merged.origins, layers)),
    );
}

/** StarPO options that are each valid but refuse each other (StarPO checks them too, once built). */
function checkStarPOCombinations(
  settings: TrainingSettings,
  merged: Merged,
  layers: readonly Layer[],
  input: SettingsInput,
): void {
  if (settings.algorithm !== "starpo") return;
  const s = settings.starpo;
  const issues = [];
  if (s.uncertaintyFilter && s.filterStrategy === "top_p" && s.filterKeep === "lowest")
    issues.push({
      field: "starpo.filterKeep",
      message:
        "lowest does not go with filterStrategy top_p, which keeps the groups holding most of the score mass from the highest; use top_k or min_p",
    });
  if (s.klInReward && s.klRewardCoeff === 0)
    issues.push({
      field: "starpo.klRewardCoeff",
      message: "0 with starpo.klInReward=true would change no reward; set it above 0 (verl: 0.001)",
    });
  if (issues.length > 0)
    throw new ConfigError(
      subjectOf(input),
      issues.map((issue) => locate(issue, merged.origins, layers)),
    );
}

/**
 * Why a remote rollout engine cannot train with these settings (none for the local engine): it needs
 * servers, LoRA adapters (a running server swaps in adapters, not whole weights) and StarPO. Checked when
 * the settings are resolved, and again by runTraining for settings built in code.
 */
export function remoteRolloutProblems(settings: TrainingSettings): ConfigIssue[] {
  const { engine, servers } = settings.rollout;
  if (engine === "local") return [];
  const issues: ConfigIssue[] = [];
  if (!servers?.length)
    issues.push({
      field: "rollout.servers",
      message: `rollout.engine=${engine} samples on inference servers: name them, e.g. rollout.servers=http://10.0.0.5:8000,http://10.0.0.6:8000`,
    });
  if (settings.lora.rank === 0)
    issues.push({
      field: "lora.rank",
      message: `0 with rollout.engine=${engine}: the servers keep the base model and load each update as a LoRA adapter, and only adapters can be swapped into a running server; set lora.rank above 0 (RAGEN's LoRA runs: 64), or rollout.engine=local`,
    });
  if (settings.algorithm === "apo")
    issues.push({
      field: "algorithm",
      message: `apo with rollout.engine=${engine}: A*-PO's stage 1 samples the frozen start model in this process, and its regression has no importance ratio to correct for a sampler that lags the learner; use algorithm=starpo, or rollout.engine=local`,
    });
  return issues;
}

/** train.groupsPerEnv names each training env once and sums to envGroups; or envGroups splits evenly. */
function checkTrainingGroups(
  settings: TrainingSettings,
  merged: Merged,
  layers: readonly Layer[],
  input: SettingsInput,
): void {
  const { envGroups, groupsPerEnv, groupSize } = settings.train;
  const fail = (field: string, message: string) => {
    throw new ConfigError(subjectOf(input), [locate({ field, message }, merged.origins, layers)]);
  };
  if (envGroups * groupSize > SIZE_LIMITS.rolloutsPerStep)
    fail(
      "train.groupSize",
      `${envGroups} groups of ${groupSize} make ${envGroups * groupSize} rollouts a step; at most ${SIZE_LIMITS.rolloutsPerStep} fit a step's batch`,
    );
  if (groupsPerEnv === null) {
    if (envGroups % settings.envs.length !== 0)
      fail(
        "train.envGroups",
        `${envGroups} must be a multiple of the number of envs (${settings.envs.length}), or set train.groupsPerEnv`,
      );
    return;
  }
  const stray = Object.keys(groupsPerEnv).filter((tag) => !settings.envs.includes(tag));
  const missing = settings.envs.filter((tag) => !(tag in groupsPerEnv));
  const total = Object.values(groupsPerEnv).reduce((a, b) => a + b, 0);
  if (stray.length > 0)
    fail("train.groupsPerEnv", `${stray.join(", ")} is not among envs (${settings.envs.join(", ")})`);
  if (missing.length > 0) fail("train.groupsPerEnv", `no groups for ${missing.join(", ")}`);
  if (total !== envGroups)
    fail("train.groupsPerEnv", `the groups sum to ${total}, but train.envGroups is ${envGroups}`);
}

/** The settings with their fields in the order fields.ts gives them (for printing and saving). */
function inFieldOrder(settings: TrainingSettings): TrainingSettings {
  const ordered = (fields: object, values: Record<string, unknown>): Record<string, unknown> =>
    Object.fromEntries(
      Object.keys(fields).map((key) => [
        key,
        (SECTIONS as readonly string[]).includes(key) && fields === SETTINGS_FIELDS
          ? ordered(
              (SETTINGS_FIELDS as unknown as Record<string, object>)[key]!,
              values[key] as Record<string, unknown>,
            )
          : values[key],
      ]),
    );
  return ordered(
    SETTINGS_FIELDS,
    settings as unknown as Record<string, unknown>,
  ) as unknown as TrainingSettings;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * `Tag=URL,Tag=URL` as a map of servers; a server given as a bare URL, or without a protocol, speaks
 * OpenEnv (what `ragen serve-env` serves). Anything else is left for the schema to refuse.
 */
function parseEnvServers(value: unknown): unknown {
  let servers = value;
  if (typeof value === "string") {
    servers = Object.fromEntries(
      value.split(",").map((pair) => {
        const eq = pair.indexOf("=");
        return eq < 0 ? [pair.trim(), ""] : [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()];
      }),
    );
  }
  if (!isPlainObject(servers)) return servers;
  return Object.fromEntries(
    Object.entries(servers).map(([tag, server]) => [
      tag,
      typeof server === "string"
        ? { url: server, protocol: "openenv" }
        : isPlainObject(server) && !("protocol" in server)
          ? { ...server, protocol: "openenv" }
          : server,
    ]),
  );
}

/** `seeds=0,1,2` (or one number) as a list of numbers; anything else is left for the schema to refuse. */
function parseSeedList(value: unknown): unknown {
  if (typeof value === "number") return [value];
  const list = parseList(value);
  return Array.isArray(list)
    ? list.map((item) => (typeof item === "string" && /^\d+$/.test(item) ? Number(item) : item))
    : list;
}
