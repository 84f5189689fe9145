// The `ragen` command's parts, for tests and tools that run it in-process. The training job is the
// library @ragen/trainer; supervised fine-tuning is @ragen/sft.
export { type EnvListing, formatEnvListing, listEnvironments } from "./commands/envs.js";
export { runRagen } from "./commands/main.js";
export { type PlayStreams, playCommand } from "./commands/play.js";
export { UsageError } from "./commands/usage.js";
