/** Settings that make a run of any training job take seconds: for smoke tests with a tiny model. */
export const SMOKE_RUN_SETTINGS: readonly string[] = [
  "train.envGroups=2",
  "train.groupSize=2",
  "validation.groupsPerEnv=2",
  "validation.every=1",
  "rollout.maxTurns=2",
  "rollout.maxNewTokens=6",
  "starpo.microBatchSize=2",
  "starpo.ppoMiniBatchSize=2",
  "apo.microBatchSize=2",
  "apo.samples=2",
];
