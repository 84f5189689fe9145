/**
 * Where a run keeps what it produces — metrics, trajectories, its settings and summary, checkpoints, the
 * report, A*-PO's V* cache — behind one small interface, so the loop runs the same in Node (files,
 * written atomically: `NodeRunStorage` in "@ragen/trainer/node") and in a browser (`MemoryRunStorage`).
 */
import type { VStarCache } from "@ragen/algos-apo";
import type { TrajectoryRecord } from "@ragen/logging";
import type { LoraAdapters, LoraTarget, Qwen2Config, Qwen2Model, Qwen2ValueModel } from "@ragen/models";
import type { AdamW, Backend } from "@ragen/tensor-webgpu";
import type { LoadedPolicy } from "./policy.js";

/** The LoRA settings a checkpoint was trained with, kept in its state to check a resume against. */
export interface LoraCheckpointState {
  rank: number;
  alpha: number;
  targets: LoraTarget[];
  critic: boolean;
}

export interface CheckpointState {
  /** The last completed training step. */
  step: number;
  /** Training resets of the env manager (the position in the training seed sequence). */
  trainResets: number;
  /** The model the run started from, so a resume with another model is refused. */
  model: string;
  /** The algorithm's own state (StarPO's: updates done and the in-reward KL coefficient), when it has one. */
  algorithm?: Record<string, number>;
  /**
   * A LoRA run's adapter settings. Its checkpoint holds the adapters instead of the actor's weights (and
   * a LoRA critic's adapters and score head instead of the critic's), on the base model `model`.
   */
  lora?: LoraCheckpointState;
}

/**
 * What a checkpoint holds besides its state. An actor with LoRA adapters attached is saved as its
 * adapters alone (PEFT's layout where the storage has files), a critic as criticCheckpointWeights says.
 */
export interface CheckpointParts {
  actor: Qwen2Model;
  actorConfig: Qwen2Config;
  tokenizerFiles: LoadedPolicy["tokenizerFiles"];
  critic: Qwen2ValueModel | undefined;
  optimizers: Record<string, AdamW | undefined>;
}

export interface StoredCheckpoint {
  state: CheckpointState;
  /** The name a PolicyLoader loads the saved actor by (a LoRA run's: its adapter on the base model). */
  actorSource: string;
  loadCritic(config: Qwen2Config, backend: Backend): Promise<Qwen2ValueModel>;
  /** Restores the optimisers' moments saved under the same names. */
  loadOptimizers(optimizers: Record<string, AdamW | undefined>): Promise<void>;
  /**
   * A LoRA run's trained tensors: the actor's adapters by PEFT name, or the critic's adapters and its
   * score head (criticCheckpointWeights' names). Needed to resume a checkpoint whose state has `lora`.
   */
  loadAdapters?(part: "actor" | "critic"): Promise<Map<string, Float32Array>>;
}

export interface MetricsHistoryRow {
  step: number;
  metrics: Record<string, number>;
}

/** A run's open logs. */
export interface RunLogs {
  /** Every row logged, an earlier attempt's kept rows included. */
  history(): readonly MetricsHistoryRow[];
  /** One row per step; steps only grow. */
  log(step: number, metrics: Record<string, number>): void;
  appendTrajectories(records: readonly TrajectoryRecord[]): void;
  close(): Promise<void>;
}

export interface RunStorage {
  /** Where the run is kept, for messages ("runs/quest"). */
  readonly location: string;
  /**
   * Takes the run's place for this run alone (a lock), before anything is read or written; a second run
   * into the same place refuses at once. Optional: storage nobody else can reach needs none.
   */
  acquire?(): void;
  /** Gives the place back; called at the end of the run, also when it fails. */
  release?(): void;
  /** The last complete checkpoint, if the run has one. */
  findCheckpoint(): StoredCheckpoint | undefined;
  /**
   * The highest step an earlier run logged metrics for, or undefined when it logged none. Logs that
   * cannot be read count as Infinity: nothing may overwrite them unnoticed.
   */
  lastLoggedStep(): number | undefined;
  /** Opens the logs, dropping rows after `afterStep` (logged after the checkpoint by a run that was killed). */
  openLogs(afterStep: number): RunLogs;
  readJson(name: string): unknown;
  /** Replaces the document `name` whole. */
  writeJson(name: string, value: unknown): void;
  /** Replaces the checkpoint; a failure midway leaves the previous one whole. */
  saveCheckpoint(parts: CheckpointParts, state: CheckpointState): Promise<void>;
  /**
   * Writes the HTML report of the logs; returns where it is. `validationEpisodes` (per env) lets it
   * flag validations that fell below the start by more than two standard errors.
   */
  writeReport(title: string, options?: { validationEpisodes?: number }): string;
  /** A*-PO's V* estimates, kept with the run so that a resumed run does not sample them again. */
  openVStarCache(): VStarCache & { close(): void };
  /**
   * Writes `adapters` in PEFT's layout as the folder `<location>/adapters/<id>/`, atomically (a reader
   * finds the old folder or the new one whole), and returns its absolute path: what inference servers
   * load (remote rollouts). Storage without folders has none, and cannot serve remote engines.
   */
  writeAdapter?(id: string, adapters: LoraAdapters, baseModel: string): Promise<string>;
  /** The adapter folders written and not removed, by id. */
  listAdapters?(): string[];
  /** The weights in adapter folder `id` (PEFT names), as writeAdapter wrote them. */
  readAdapter?(id: string): Promise<Map<string, Float32Array>>;
  /** The absolute path of adapter folder `id`: what writeAdapter returned for it. */
  adapterPath?(id: string): string;
  /** Removes adapter folder `id`; one that is not there is fine. */
  removeAdapter?(id: string): void;
}
