/**
 * `npm run quest`: the Quest homework as a training script — an LLM agent trained with StarPO (PPO + GAE)
 * on FrozenLake and Bandit, validated on fixed seeds against the oracle (the ceiling) and a random policy
 * (the floor). The whole loop is here, built from the packages' public APIs; `ragen train` runs the same
 * loop (`runTraining` in @ragen/trainer), and a test checks that the two log the same metrics.
 *
 *   npm run quest                                         # the embedded tiny model, CPU/lavapipe friendly
 *   npm run quest -- model=Qwen/Qwen2.5-0.5B-Instruct     # a Hub model (or a local Hugging Face folder)
 *   npm run quest -- steps=50 starpo.actorLr=1e-4 outDir=runs/mine
 *   npm run quest -- quest.yaml --print-config            # the settings, each with where it came from
 */
import { fileURLToPath } from "node:url";
import { StarPO } from "@ragen/algos-ppo";
import { ConfigError } from "@ragen/envs";
import { Qwen2ValueModel } from "@ragen/models";
import { LocalModelPolicy, runRollout } from "@ragen/rollout";
import { type WebGpuBackend, webGpuBackend } from "@ragen/tensor-webgpu";
import {
  actionBudget,
  checkMemoryFit,
  checkSettingsFit,
  describeProfileChoice,
  findResumePoint,
  formatResolvedSettings,
  formatTrainingSummary,
  GENERATED_TOKENS,
  generatedTokens,
  lastLogged,
  localPolicyOptions,
  longestSequence,
  measureBaselines,
  NonFiniteLossGuard,
  type ResolvedSettings,
  RUN_DOCUMENTS,
  rolloutOptions,
  settingsHelp,
  starpoConfig,
  stepPerformance,
  summaryRows,
  type TrainingSettings,
  type TrainingSummary,
  toTrajectoryRecord,
  trainingManager,
  trainingSeed,
  validate,
  validationEnvs,
  validationManager,
  validationSeeds,
  warnOnCollapse,
} from "@ragen/trainer";
import {
  deviceMemoryBudget,
  loadPolicy,
  loadPolicyWithProgress,
  NodeRunStorage,
  parseRunArguments,
  resolveRunSettings,
  runSeedSweep,
} from "@ragen/trainer/node";

export async function trainQuest(args: readonly string[], cwd: string): Promise<TrainingSummary | undefined> {
  // Settings: the embedded profile's defaults (auto picks it for the embedded model), then a config file (quest.yaml spells them out), then key=value.
  const parsed = parseRunArguments(args, { positionalFile: true });
  if (parsed.help) {
    console.log(settingsHelp("npm run quest -- [config.yaml] [key=value ...] [--print-config]"));
    return undefined;
  }
  const resolved = await resolveRunSettings({
    ...parsed,
    cwd,
    ...(parsed.printConfig ? { sizeModel: "if-available" as const } : {}),
  });
  if (parsed.printConfig) {
    process.stdout.write(formatResolvedSettings(resolved));
    return undefined;
  }
  const { settings } = resolved;
  if (settings.algorithm !== "starpo")
    throw new ConfigError("settings", [
      { field: "algorithm", message: "this script trains with StarPO; `ragen train` runs A*-PO too" },
    ]);
  if (settings.lora.rank > 0)
    throw new ConfigError("settings", [
      { field: "lora.rank", message: "this script trains every weight; `ragen train` trains LoRA adapters" },
    ]);
  // seeds=0,1,2: the same run for each seed, one folder each, and a summary across them.
  if (settings.seeds !== null) {
    let last: TrainingSummary | undefined;
    await runSeedSweep(resolved, async (seedSettings) => {
      last = await trainQuestSeed(seedSettings);
    });
    return last;
  }
  return trainQuestSeed(resolved);
}

async function trainQuestSeed(resolved: ResolvedSettings): Promise<TrainingSummary> {
  const { settings } = resolved;
  const wallStart = performance.now();
  // The run folder, held by this run alone: a killed run continues from its last checkpoint.
  const storage = new NodeRunStorage(settings.outDir);
  storage.acquire();
  try {
    // Each seed of a sweep has a device of its own, destroyed at its end: left to the garbage collector,
    // lavapipe's devices pile up until the process runs out of memory mappings.
    const backend = await webGpuBackend();
    try {
      return await trainQuestInFolder(settings, resolved, storage, backend, wallStart);
    } finally {
      backend.destroy();
    }
  } finally {
    storage.release();
  }
}

async function trainQuestInFolder(
  settings: TrainingSettings,
  resolved: ResolvedSettings,
  storage: NodeRunStorage,
  backend: WebGpuBackend,
  wallStart: number,
): Promise<TrainingSummary> {
  const progress = process.stderr;
  const checkpoint = findResumePoint(storage, settings, (line) => console.log(line));
  console.log(`RAGEN.ts Quest — ${settings.envs.join(" + ")} with StarPO on ${settings.model}`);
  for (const line of describeProfileChoice(resolved)) console.log(line);
  console.log("");

  // The floor and the ceiling: random and oracle play the validation seeds.
  const baselines = validationEnvs(settings).map((env) =>
    measureBaselines(env, validationSeeds(settings, env), actionBudget(settings, env), progress),
  );

  // The actor, its critic (a value head on a copy of the actor), and the frozen start model for the KL term.
  const actor = await loadPolicyWithProgress(checkpoint?.actorSource ?? settings.model, backend);
  // precision=f16: every model in f16 before an optimiser is made over it (StarPO then scales the loss).
  actor.model.toDtype(settings.precision);
  checkSettingsFit(settings, actor.config, resolved.sources);
  const deviceMemory = deviceMemoryBudget(settings, backend);
  if (deviceMemory)
    checkMemoryFit(
      settings,
      actor.config,
      longestSequence(settings, actor.tokenizer),
      deviceMemory.bytes,
      deviceMemory.source,
    );
  const critic =
    settings.starpo.advantageEstimator !== "gae"
      ? undefined
      : checkpoint
        ? (await checkpoint.loadCritic(actor.config, backend)).toDtype(settings.precision)
        : await Qwen2ValueModel.fromPolicy(actor.model, settings.seed, settings.starpo.criticHeadInit);
  const reference = settings.starpo.klCoeff > 0 ? await loadPolicy(settings.model, backend) : undefined;
  reference?.model.toDtype(settings.precision);
  const starpo = new StarPO({
    actor: actor.model,
    critic,
    reference: reference?.model,
    config: starpoConfig(settings),
  });
  const optimizers = { actor: starpo.actorOptimizer, critic: starpo.criticOptimizer };
  if (checkpoint) await checkpoint.loadOptimizers(optimizers);

  // Envs: training groups (each group shares a start state) and the fixed validation seeds.
  const trainEnvs = trainingManager(settings);
  if (checkpoint) trainEnvs.restoreTrainResets(checkpoint.state.trainResets);
  const valEnvs = validationManager(settings);
  const policy = new LocalModelPolicy(actor.model, actor.tokenizer, localPolicyOptions(settings.rollout));

  const lastDone = checkpoint?.state.step ?? -1;
  const logs = storage.openLogs(lastDone);
  storage.writeJson(RUN_DOCUMENTS.settings, resolved);
  let tokens = lastLogged(logs.history(), GENERATED_TOKENS) ?? 0;
  const budgetSpent = () => settings.train.tokenBudget > 0 && tokens >= settings.train.tokenBudget;
  const title = `Quest — ${settings.model}`;
  // With the episodes per env, the report flags validations that fell more than 2 standard errors.
  const reportOptions = { validationEpisodes: settings.validation.groupsPerEnv };
  const saveCheckpoint = (step: number) =>
    storage.saveCheckpoint(
      {
        actor: actor.model,
        actorConfig: actor.config,
        tokenizerFiles: actor.tokenizerFiles,
        critic,
        optimizers,
      },
      { step, trainResets: trainEnvs.trainResets, model: settings.model },
    );

  let lastStep = Math.max(lastDone, 0);
  try {
    if (lastDone < 0) {
      const val = await validate(valEnvs, policy, actor.tokenizer, settings, 0, progress);
      logs.appendTrajectories(val.records);
      logs.log(0, val.metrics);
    }
    // A loss that stays NaN or infinite stops the run (its optimiser would skip every step).
    const lossGuard = new NonFiniteLossGuard(settings.precision);
    for (let step = lastStep + 1; step <= settings.steps && !budgetSpent(); step++) {
      // Rollout: every env plays up to maxTurns turns; each trajectory keeps its exact sampled tokens.
      const stepStart = performance.now();
      const rollout = await runRollout(
        trainEnvs,
        policy,
        actor.tokenizer,
        rolloutOptions(settings, "train", trainingSeed(settings, step)),
      );
      const genSeconds = (performance.now() - stepStart) / 1000;
      // Update: StarPO-S filter, GAE advantages from the critic, PPO clip-higher over mini-batches.
      const updateMetrics = await starpo.update(rollout);
      lossGuard.check(step, updateMetrics);
      const metrics: Record<string, number> = { ...rollout.metrics, ...updateMetrics };
      metrics["timing_s/gen"] = genSeconds;
      tokens += generatedTokens(rollout);
      metrics[GENERATED_TOKENS] = tokens;
      Object.assign(metrics, stepPerformance(rollout, stepStart, backend));
      logs.appendTrajectories(rollout.trajectories.map((t) => toTrajectoryRecord(t, step, "train")));
      lastStep = step;
      // Validation on the same seeds every few steps and at the end.
      const last = step === settings.steps || budgetSpent();
      if (step % settings.validation.every === 0 || last) {
        const val = await validate(valEnvs, policy, actor.tokenizer, settings, step, progress);
        logs.appendTrajectories(val.records);
        Object.assign(metrics, val.metrics);
      }
      metrics["timing_s/step"] = (performance.now() - stepStart) / 1000;
      logs.log(step, metrics);
      warnOnCollapse(logs.history(), step, settings, (line) => console.log(line));
      if ((settings.checkpointEvery > 0 && step % settings.checkpointEvery === 0) || last) {
        await saveCheckpoint(step);
        storage.writeReport(title, reportOptions);
      }
    }
  } finally {
    await logs.close();
    starpo.dispose();
    reference?.model.dispose();
  }

  const summary: TrainingSummary = {
    model: settings.model,
    steps: lastStep,
    generatedTokens: tokens,
    wallSeconds: (performance.now() - wallStart) / 1000,
    rows: summaryRows(baselines, logs.history(), settings),
    report: storage.writeReport(title, reportOptions),
  };
  storage.writeJson(RUN_DOCUMENTS.summary, summary);
  console.log(`\nValidation success on ${settings.validation.groupsPerEnv} fixed seeds per env:\n`);
  console.log(formatTrainingSummary(summary));
  console.log(
    `\n${summary.steps} steps in ${(summary.wallSeconds / 60).toFixed(1)} min; report: ${summary.report}`,
  );
  return summary;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // npm runs scripts inside the package; paths on the command line mean where the user typed them.
  trainQuest(process.argv.slice(2), process.env.INIT_CWD ?? process.cwd()).catch((error: Error) => {
    console.error(error instanceof ConfigError ? error.message : `quest: ${error.message}`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  });
}
