import { ACTION_SEPARATOR } from "../action.js";
import { type ConfigIssue, type ConfigSchema, EnvConfigError } from "../config.js";
import type { EnvPreset } from "../types.js";

export interface BanditConfig {
  /** Name of the arm that always pays `loArmReward`. */
  loArmName: string;
  /** Name of the arm that pays `hiArmRewardHigh` with probability `hiArmProbability`, else `hiArmRewardLow`. */
  hiArmName: string;
  loArmReward: number;
  hiArmRewardHigh: number;
  hiArmRewardLow: number;
  hiArmProbability: number;
}

/** The arm-name pairs of the presets: the training pair, the held-out test pair, and the reversed pair. */
export const BANDIT_ARM_NAME_PAIRS = {
  Bandit: { lo: "Phoenix", hi: "Dragon" },
  BanditTest: { lo: "Trader", hi: "Librarian" },
  BanditReversed: { lo: "Dragon", hi: "Phoenix" },
} as const;

// An arm name is matched after trimming, so it may not start or end with white space.
const ARM_NAME = { type: "string", minLength: 1, maxLength: 64, pattern: "^\\S(.*\\S)?$" } as const;

export const banditConfigSchema: ConfigSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    loArmName: {
      ...ARM_NAME,
      default: "Phoenix",
      description: "Name of the low-risk arm, which always pays loArmReward (RAGEN: lo_arm_name).",
    },
    hiArmName: {
      ...ARM_NAME,
      default: "Dragon",
      description:
        "Name of the risky arm, which pays more on average; must differ from loArmName, ignoring case (RAGEN: hi_arm_name).",
    },
    loArmReward: {
      type: "number",
      default: 0.1,
      description:
        "What the low arm always pays (RAGEN: lo_arm_score; 0.1 in RAGEN's code, 0.15 in its paper).",
    },
    hiArmRewardHigh: {
      type: "number",
      default: 1,
      description: "The high arm's payout when it pays well (RAGEN: hi_arm_hiscore).",
    },
    hiArmRewardLow: {
      type: "number",
      default: 0,
      description: "The high arm's payout otherwise (RAGEN: hi_arm_loscore).",
    },
    hiArmProbability: {
      type: "number",
      minimum: 0,
      maximum: 1,
      default: 0.25,
      description: "Probability that the high arm pays hiArmRewardHigh (RAGEN: hi_arm_hiscore_prob).",
    },
  },
};

/**
 * What the schema cannot say: the two arms need different names, ignoring case, since answers are
 * matched case-insensitively; and no name may contain the action separator ("||"), since the rollout
 * splits an answer on it before the name could ever match. Throws EnvConfigError naming every bad field.
 */
export function checkBanditArmNames(config: Pick<BanditConfig, "loArmName" | "hiArmName">): void {
  const issues: ConfigIssue[] = [];
  for (const field of ["loArmName", "hiArmName"] as const) {
    if (config[field].includes(ACTION_SEPARATOR)) {
      issues.push({
        field,
        message: `must not contain the action separator ${JSON.stringify(ACTION_SEPARATOR)}, which splits an answer into actions (got ${JSON.stringify(config[field])})`,
      });
    }
  }
  if (config.loArmName.trim().toLowerCase() === config.hiArmName.trim().toLowerCase()) {
    issues.push({
      field: "hiArmName",
      message: `must differ from loArmName, ignoring case (both are ${JSON.stringify(config.hiArmName)})`,
    });
  }
  if (issues.length > 0) throw new EnvConfigError("bandit", issues);
}

/** Every bandit preset is one pull: RAGEN's max_actions_per_traj is 1. */
export const banditPresets: Record<string, Omit<EnvPreset, "env">> = {
  Bandit: {
    config: { loArmName: BANDIT_ARM_NAME_PAIRS.Bandit.lo, hiArmName: BANDIT_ARM_NAME_PAIRS.Bandit.hi },
    maxActionsPerTraj: 1,
    description:
      "Two named arms, Phoenix (pays 0.1) and Dragon (pays 1 with probability 0.25): pick by the names",
  },
  BanditTest: {
    config: {
      loArmName: BANDIT_ARM_NAME_PAIRS.BanditTest.lo,
      hiArmName: BANDIT_ARM_NAME_PAIRS.BanditTest.hi,
    },
    maxActionsPerTraj: 1,
    description: "The held-out arm names: Trader (low arm) and Librarian (high arm)",
  },
  BanditReversed: {
    config: {
      loArmName: BANDIT_ARM_NAME_PAIRS.BanditReversed.lo,
      hiArmName: BANDIT_ARM_NAME_PAIRS.BanditReversed.hi,
    },
    maxActionsPerTraj: 1,
    description: "Bandit with the payouts swapped: Dragon is now the low arm and Phoenix the high one",
  },
};
