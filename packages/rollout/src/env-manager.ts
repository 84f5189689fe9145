import {
  type AsyncEnv,
  actionBudget,
  connectEnv,
  createEnv,
  type Env,
  type EnvServerAddress,
  RemoteEnvError,
  type StepResult,
} from "@ragen/envs";

/** RAGEN's base of training seeds; each reset moves it on by envGroups. */
export const TRAIN_SEED_BASE = 10000;
/** RAGEN validates on the same seeds every time. */
export const VALIDATION_SEED = 123;

export interface EnvTagGroups {
  /** A preset tag (`FrozenLake`, `Bandit`, ...) or a registered env name. */
  tag: string;
  /** How many of the env groups run this tag (RAGEN's n_groups). */
  nGroups: number;
  /** Config overrides for the env. */
  config?: object;
  /** Overrides the tag's action budget per trajectory (`actionBudget(tag)` of @ragen/envs). */
  maxActionsPerTraj?: number;
  /**
   * Play this tag's episodes on an env server (e.g. `ragen serve-env <tag>`) instead of in process, one
   * server session per env. The server must serve the same tag and config: the prompts' instructions
   * and actions come from the local registry's env.
   */
  server?: EnvServerAddress;
}

export interface EnvManagerConfig {
  envGroups: number;
  groupSize: number;
  tags: readonly EnvTagGroups[];
}

export type RolloutMode = "train" | "val";

/** One env of the batch and its episode state. */
export interface EnvSlot {
  /** Position in the batch. */
  index: number;
  /** Envs of a group share a seed, so they start from the same state. */
  groupId: number;
  tag: string;
  env: Env | AsyncEnv;
  maxActionsPerTraj: number;
  seed: number;
  observation: string;
  actionsUsed: number;
  done: boolean;
  success: boolean;
  validActions: number;
  effectiveActions: number;
  /**
   * Why this episode's env was lost (its server failed past its retries), naming the env, the seed and
   * the request; the episode ended there. Unset while the env answers.
   */
  lost?: string;
}

/** What one turn's actions did. */
export interface TurnOutcome {
  /** Sum of the step rewards (penalty not included). */
  reward: number;
  /** The actions actually executed (the budget or the end of the episode may cut the list). */
  executed: string[];
  observation: string;
  done: boolean;
}

export class EnvManagerConfigError extends Error {
  override readonly name = "EnvManagerConfigError";
}

/**
 * RAGEN's env state manager: envGroups x groupSize envs, groups split over env tags. Group i resets
 * with seed base + i; training bases start at 10000 and move on by envGroups at each reset (fresh
 * starts every step); validation always starts from 123 (the same starts at every evaluation).
 */
export class EnvManager {
  readonly slots: EnvSlot[];
  private trainCounter = 0;

  constructor(readonly config: EnvManagerConfig) {
    const { envGroups, groupSize, tags } = config;
    for (const [name, value] of [
      ["envGroups", envGroups],
      ["groupSize", groupSize],
    ] as const) {
      if (!Number.isInteger(value) || value < 1)
        throw new EnvManagerConfigError(`${name} must be a positive integer, got ${value}`);
    }
    const total = tags.reduce((sum, t) => sum + t.nGroups, 0);
    if (tags.some((t) => !Number.isInteger(t.nGroups) || t.nGroups < 0) || total !== envGroups) {
      throw new EnvManagerConfigError(
        `nGroups per tag (${tags.map((t) => `${t.tag}: ${t.nGroups}`).join(", ")}) must be non-negative integers summing to envGroups (${envGroups})`,
      );
    }
    this.slots = [];
    let groupId = 0;
    for (const spec of tags) {
      const budget = spec.maxActionsPerTraj ?? actionBudget(spec.tag);
      if (!Number.isInteger(budget) || budget < 1)
        throw new EnvManagerConfigError(
          `maxActionsPerTraj of ${spec.tag} must be a positive integer, got ${budget}`,
        );
      const local = spec.server ? createEnv(spec.tag, spec.config) : undefined;
      const makeEnv = (): Env | AsyncEnv =>
        spec.server && local
          ? connectEnv(spec.server, {
              name: local.name,
              config: local.config as object,
              instructions: local.instructions,
              actions: local.actions,
            })
          : createEnv(spec.tag, spec.config);
      for (let g = 0; g < spec.nGroups; g++, groupId++) {
        for (let member = 0; member < groupSize; member++) {
          this.slots.push({
            index: this.slots.length,
            groupId,
            tag: spec.tag,
            env: makeEnv(),
            maxActionsPerTraj: budget,
            seed: 0,
            observation: "",
            actionsUsed: 0,
            done: false,
            success: false,
            validActions: 0,
            effectiveActions: 0,
          });
        }
      }
    }
  }

  /** Training resets so far: where a checkpoint resumes the training seed sequence. */
  get trainResets(): number {
    return this.trainCounter / this.config.envGroups;
  }

  /** Continue the training seeds as if `resets` training resets had happened (resuming a run). */
  restoreTrainResets(resets: number): void {
    if (!Number.isInteger(resets) || resets < 0)
      throw new EnvManagerConfigError(`restoreTrainResets(): expected a non-negative integer, got ${resets}`);
    this.trainCounter = resets * this.config.envGroups;
  }

  /** The seed base the next reset in `mode` will use. */
  nextSeedBase(mode: RolloutMode): number {
    return mode === "val" ? VALIDATION_SEED : TRAIN_SEED_BASE + this.trainCounter;
  }

  /**
   * The start seeds the next reset in `mode` gives the groups of env `tag`, one per group in group order
   * (groups are numbered across tags, so a later tag's seeds follow the earlier tags').
   */
  seedsOf(tag: string, mode: RolloutMode): number[] {
    const base = this.nextSeedBase(mode);
    const groups = new Set<number>();
    for (const slot of this.slots) if (slot.tag === tag) groups.add(slot.groupId);
    return [...groups].map((groupId) => base + groupId);
  }

  /**
   * Resets every env for a new batch of episodes; returns the slots. Remote envs reset together; each
   * slot keeps its own reply, so the batch does not depend on which server answers first.
   */
  async reset(mode: RolloutMode): Promise<EnvSlot[]> {
    const base = this.nextSeedBase(mode);
    if (mode === "train") this.trainCounter += this.config.envGroups;
    await Promise.all(
      this.slots.map(async (slot) => {
        slot.seed = base + slot.groupId;
        slot.actionsUsed = 0;
        slot.done = false;
        slot.success = false;
        slot.validActions = 0;
        slot.effectiveActions = 0;
        slot.lost = undefined;
        try {
          slot.observation = await slot.env.reset(slot.seed);
        } catch (error) {
          this.lose(slot, error, "reset");
        }
      }),
    );
    return this.slots;
  }

  /**
   * Ends `slot`'s episode when `error` is a remote env's failure (its server down, timing out or
   * answering nonsense past the retries): one lost server costs its episodes, not the run. Anything else
   * is a bug and is thrown on.
   */
  private lose(slot: EnvSlot, error: unknown, during: string): void {
    if (!(error instanceof RemoteEnvError)) throw error;
    slot.lost = `${slot.tag} env (seed ${slot.seed}) lost during ${during}: ${error.message}`;
    slot.done = true;
  }

  /** Runs `actions` in order until the episode ends or the trajectory's budget is used. */
  async step(slot: EnvSlot, actions: readonly string[]): Promise<TurnOutcome> {
    let reward = 0;
    const executed: string[] = [];
    for (const action of actions) {
      if (slot.done || slot.actionsUsed >= slot.maxActionsPerTraj) break;
      let result: StepResult;
      try {
        result = await slot.env.step(action);
      } catch (error) {
        this.lose(slot, error, `step ${slot.actionsUsed + 1}`);
        break;
      }
      executed.push(action);
      slot.actionsUsed++;
      reward += result.reward;
      slot.observation = result.observation;
      if (result.info.actionIsValid) slot.validActions++;
      if (result.info.actionIsEffective) slot.effectiveActions++;
      if (result.info.success) slot.success = true;
      if (result.done) slot.done = true;
    }
    return { reward, executed, observation: slot.observation, done: slot.done };
  }

  /**
   * One turn of several envs: each slot's actions run in order as `step` runs them, the slots side by
   * side (remote envs wait on their servers together). The outcomes come back in the order of `turns`.
   */
  async stepAll(turns: readonly { slot: EnvSlot; actions: readonly string[] }[]): Promise<TurnOutcome[]> {
    const seen = new Set<EnvSlot>();
    for (const { slot } of turns) {
      if (seen.has(slot))
        throw new EnvManagerConfigError(`stepAll(): env ${slot.index} appears twice in one turn`);
      seen.add(slot);
    }
    return Promise.all(turns.map(({ slot, actions }) => this.step(slot, actions)));
  }

  /**
   * Ends what the envs hold elsewhere (remote sessions); in-process envs hold nothing. A server that is
   * gone has nothing left to free, so its failure to answer is not an error here.
   */
  async close(): Promise<void> {
    const closed = await Promise.allSettled(
      this.slots.map((slot) => ("close" in slot.env ? slot.env.close?.() : undefined)),
    );
    for (const outcome of closed)
      if (outcome.status === "rejected" && !(outcome.reason instanceof RemoteEnvError)) throw outcome.reason;
  }

  /** Actions the trajectory may still take. */
  actionsLeft(slot: EnvSlot): number {
    return slot.maxActionsPerTraj - slot.actionsUsed;
  }
}
