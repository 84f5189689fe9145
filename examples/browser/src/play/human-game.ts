/**
 * A person's episode: the env of a preset, reset with a seed, stepped by keys and clicks, scored with
 * the preset's action budget as an agent would be (RAGEN's max_actions_per_traj).
 */
import { createEnv, type Env, listPresets, oracleAction, Rng, type StepResult } from "@ragen/envs";

export interface MoveRecord {
  action: string;
  reward: number;
  valid: boolean;
  effective: boolean;
}

export class HumanGame {
  readonly env: Env;
  readonly actionBudget: number;
  readonly moves: MoveRecord[] = [];
  last: StepResult | undefined;
  totalReward = 0;
  success = false;
  private envDone = false;
  // One stream per episode, so the oracle's tie-breaks replay with the seed.
  private readonly oracleRng: Rng;

  constructor(
    readonly preset: string,
    readonly seed: number,
  ) {
    this.env = createEnv(preset);
    const budget = listPresets()[preset]?.maxActionsPerTraj;
    if (budget === undefined) throw new Error(`unknown preset "${preset}"`);
    this.actionBudget = budget;
    this.env.reset(seed);
    this.oracleRng = new Rng(seed, "oracle-hint");
  }

  get actionsUsed(): number {
    return this.moves.length;
  }

  /** The env ended the episode, or the budget is spent. */
  get over(): boolean {
    return this.envDone || this.actionsUsed >= this.actionBudget;
  }

  /** Why the episode is over, in words; undefined while it goes on. */
  get overReason(): string | undefined {
    if (this.envDone) return this.success ? "solved" : "the env ended it without success";
    if (this.actionsUsed >= this.actionBudget)
      return `out of actions (the preset allows ${this.actionBudget})`;
    return undefined;
  }

  /** Runs `action` unless the episode is over; returns the step, or undefined when nothing ran. */
  act(action: string): StepResult | undefined {
    if (this.over) return undefined;
    const result = this.env.step(action);
    this.last = result;
    this.totalReward += result.reward;
    if (result.info.success) this.success = true;
    if (result.done) this.envDone = true;
    this.moves.push({
      action,
      reward: result.reward,
      valid: result.info.actionIsValid,
      effective: result.info.actionIsEffective,
    });
    return result;
  }

  /** The oracle's next action in the current state (it does not change the env). */
  hint(): string | undefined {
    if (this.over) return undefined;
    return oracleAction(this.env, this.oracleRng);
  }
}
