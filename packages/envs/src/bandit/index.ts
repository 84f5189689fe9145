import type { EnvSpec } from "../types.js";
import { type BanditConfig, banditConfigSchema, banditPresets } from "./config.js";
import { BanditEnv } from "./env.js";
import { banditOracle } from "./oracle.js";
import { banditThought } from "./thought.js";

export {
  BANDIT_ARM_NAME_PAIRS,
  type BanditConfig,
  banditConfigSchema,
  banditPresets,
  checkBanditArmNames,
} from "./config.js";
export { BanditEnv, type BanditStepInfo } from "./env.js";
export { banditExpectedRewards, banditOracle } from "./oracle.js";
export { type BanditPull, renderBanditSvg } from "./render.js";
export { banditInstructionsText, banditOutcomeText, banditPromptText, formatBanditPoints } from "./text.js";
export { banditThought } from "./thought.js";

export const banditSpec: EnvSpec<BanditConfig, BanditEnv> = {
  name: "bandit",
  description: "RAGEN's two-armed bandit with named arms: one pull, chosen by what the names suggest",
  schema: banditConfigSchema,
  create: (config: BanditConfig) => new BanditEnv(config),
  oracle: banditOracle,
  thought: banditThought,
  presets: banditPresets,
};
