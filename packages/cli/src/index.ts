// The `ragen` command's parts, for tests and tools that run it in-process. The training job is the
// library @ragen/trainer; supervised fine-tuning is @ragen/sft.
export { type EnvListing, formatEnvListing, listEnvironments } from "./commands/envs.js";
export { runRagen } from "./commands/main.js";
export { type PlayStreams, playCommand } from "./commands/play.js";
export {
  ENV_SERVER_DEFAULTS,
  type EnvServerOptions,
  type RunningEnvServer,
  startEnvServer,
} from "./commands/serve-env.js";
export { UsageError } from "./commands/usage.js";
export { type PolicyServer, type PolicyServerOptions, startPolicyServer } from "./policy-server.js";
