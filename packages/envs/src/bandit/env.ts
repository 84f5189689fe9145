import { readAction } from "../action.js";
import { validateConfig } from "../config.js";
import { Rng } from "../rng.js";
import type { Env, StepInfo, StepResult } from "../types.js";
import { type BanditConfig, banditConfigSchema, checkBanditArmNames } from "./config.js";
import { type BanditPull, renderBanditSvg } from "./render.js";
import { banditInstructionsText, banditOutcomeText, banditPromptText } from "./text.js";

export interface BanditStepInfo extends StepInfo {
  /** The arm pulled (its configured name), or null when the answer named no arm. */
  arm: string | null;
  /** The pulled arm's action position in this episode (1 or 2), or null. */
  armPosition: 1 | 2 | null;
  /** The pulled arm was the high arm (the same as success). */
  isHighArm: boolean;
}

/**
 * RAGEN's two-armed bandit with named arms: one pull, then done. The agent is meant to pick the arm
 * whose name suggests the better payout. On reset the order of the two names (action 1 or 2) is
 * shuffled 50/50; payouts come from a separate stream of the same seed.
 *
 * An answer that is not one of the two names (after trimming, ignoring case) is an invalid no-op and
 * the episode stays open: RAGEN's env manager drops such answers without stepping the env and charges
 * a format penalty instead.
 */
export class BanditEnv implements Env<BanditConfig, BanditStepInfo> {
  readonly name = "bandit";
  readonly config: Readonly<BanditConfig>;

  private order: readonly [string, string];
  private payouts: Rng | null = null;
  private observation = "";
  private finished = true;
  private pull: BanditPull | null = null;

  /** `config` is validated against the schema and completed with its defaults; equal arm names throw EnvConfigError. */
  constructor(config: Partial<BanditConfig> = {}) {
    const checked = validateConfig<BanditConfig>("bandit", banditConfigSchema, config);
    checkBanditArmNames(checked);
    this.config = Object.freeze(checked);
    // Before the first reset the names are listed alphabetically, which says nothing about payouts.
    const names = [checked.loArmName, checked.hiArmName].sort((a, b) => a.localeCompare(b, "en"));
    this.order = [names[0]!, names[1]!];
  }

  get done(): boolean {
    return this.finished;
  }

  /** The two arm names in this episode's action order (arm 1, arm 2). */
  get actions(): readonly string[] {
    return this.order;
  }

  get armOrder(): readonly [string, string] {
    return this.order;
  }

  get instructions(): string {
    return banditInstructionsText(this.order[0], this.order[1]);
  }

  /** The pull made this episode (null before it). */
  get lastPull(): Readonly<BanditPull> | null {
    return this.pull;
  }

  reset(seed: number): string {
    const { loArmName, hiArmName } = this.config;
    this.order = Rng.derive(seed, "bandit-order").bool(0.5) ? [loArmName, hiArmName] : [hiArmName, loArmName];
    this.payouts = Rng.derive(seed, "bandit-payout");
    this.pull = null;
    this.finished = false;
    this.observation = banditPromptText(this.order[0], this.order[1]);
    return this.observation;
  }

  step(action: string): StepResult<BanditStepInfo> {
    if (this.finished) return this.noOp(true);
    const position = this.armPositionOf(action);
    if (position === null) return this.noOp(false);

    const arm = this.order[position - 1]!;
    const isHighArm = arm === this.config.hiArmName;
    const reward = isHighArm ? this.payHighArm() : this.config.loArmReward;
    this.pull = { arm, reward };
    this.finished = true;
    this.observation = banditOutcomeText(arm, reward);
    return {
      observation: this.observation,
      reward,
      done: true,
      info: {
        success: isHighArm,
        actionIsValid: true,
        actionIsEffective: true,
        arm,
        armPosition: position,
        isHighArm,
      },
    };
  }

  private payHighArm(): number {
    const { hiArmProbability, hiArmRewardHigh, hiArmRewardLow } = this.config;
    return this.payouts!.bool(hiArmProbability) ? hiArmRewardHigh : hiArmRewardLow;
  }

  private armPositionOf(action: unknown): 1 | 2 | null {
    const text = readAction(action);
    if (text === null) return null;
    const wanted = text.trim().toLowerCase();
    if (wanted === this.order[0].toLowerCase()) return 1;
    if (wanted === this.order[1].toLowerCase()) return 2;
    return null;
  }

  private noOp(done: boolean): StepResult<BanditStepInfo> {
    const isHighArm = this.pull !== null && this.pull.arm === this.config.hiArmName;
    return {
      observation: this.observation,
      reward: 0,
      done,
      info: {
        success: isHighArm,
        actionIsValid: false,
        actionIsEffective: false,
        arm: null,
        armPosition: null,
        isHighArm,
      },
    };
  }

  render(): string {
    return this.observation;
  }

  renderSvg(): string {
    return renderBanditSvg(this.config, this.order, this.pull);
  }

  availableActions(): string[] {
    return [...this.order];
  }
}
