/**
 * A run kept in memory: for a browser page, and for tests of the loop. Checkpoints hold copies of the
 * weights and optimiser moments, so a run resumed on the same storage continues exactly.
 */
import { MemoryVStarCache } from "@ragen/algos-apo";
import { buildReport, type MetricsRow, type TrajectoryRecord } from "@ragen/logging";
import { type Qwen2Config, Qwen2ValueModel } from "@ragen/models";
import type { AdamW, AdamWState, Backend, Tensor } from "@ragen/tensor-webgpu";
import { criticCheckpointWeights } from "./lora.js";
import type { CheckpointParts, CheckpointState, RunLogs, RunStorage, StoredCheckpoint } from "./storage.js";

interface KeptCheckpoint {
  state: CheckpointState;
  /** The actor's weights, or with LoRA its adapters by PEFT name. */
  actor: Map<string, Float32Array>;
  /** The critic's weights, or with LoRA its adapters and score head. */
  critic: Map<string, Float32Array> | undefined;
  optimizers: Record<string, AdamWState>;
}

export class MemoryRunStorage implements RunStorage {
  readonly rows: MetricsRow[] = [];
  readonly trajectories: TrajectoryRecord[] = [];
  readonly documents = new Map<string, unknown>();
  /** The last report written. */
  report = "";
  /** The weights of saved actors by source name, for a PolicyLoader to load a checkpoint's actor from. */
  readonly actors = new Map<string, Map<string, Float32Array>>();
  private checkpoint: KeptCheckpoint | undefined;
  private readonly vstar = new MemoryVStarCache();

  constructor(
    readonly location = "memory",
    private readonly now: () => number = Date.now,
  ) {}

  findCheckpoint(): StoredCheckpoint | undefined {
    const kept = this.checkpoint;
    if (!kept) return undefined;
    return {
      state: { ...kept.state },
      actorSource: `${this.location}/checkpoint/actor`,
      loadCritic: async (config: Qwen2Config, backend: Backend) => {
        if (!kept.critic) throw new Error(`${this.location}: the checkpoint has no critic`);
        return Qwen2ValueModel.fromWeights(config, kept.critic, backend);
      },
      loadAdapters: async (part: "actor" | "critic") => {
        const saved = part === "actor" ? kept.actor : kept.critic;
        if (!kept.state.lora || !saved)
          throw new Error(`${this.location}: the checkpoint has no ${part} adapters`);
        return new Map(saved);
      },
      loadOptimizers: async (optimizers: Record<string, AdamW | undefined>) => {
        for (const [name, optimizer] of Object.entries(optimizers)) {
          const state = kept.optimizers[name];
          if (!optimizer) continue;
          if (!state) throw new Error(`${this.location}: no saved state for the ${name} optimiser`);
          optimizer.loadStateDict(state);
        }
      },
    };
  }

  lastLoggedStep(): number | undefined {
    return this.rows.reduce<number | undefined>(
      (last, row) => Math.max(last ?? row.step, row.step),
      undefined,
    );
  }

  openLogs(afterStep: number): RunLogs {
    const keep = (step: number) => step <= afterStep;
    this.rows.splice(0, this.rows.length, ...this.rows.filter((row) => keep(row.step)));
    this.trajectories.splice(0, this.trajectories.length, ...this.trajectories.filter((t) => keep(t.step)));
    return {
      history: () => this.rows,
      log: (step, metrics) => {
        const last = this.rows.at(-1)?.step;
        if (last !== undefined && step <= last) throw new Error(`step ${step} logged after step ${last}`);
        this.rows.push({ step, wall_time: this.now() / 1000, metrics: { ...metrics } });
      },
      appendTrajectories: (records) => {
        this.trajectories.push(...records);
      },
      close: async () => {},
    };
  }

  readJson(name: string): unknown {
    return structuredClone(this.documents.get(name));
  }

  writeJson(name: string, value: unknown): void {
    this.documents.set(name, structuredClone(value));
  }

  async saveCheckpoint(parts: CheckpointParts, state: CheckpointState): Promise<void> {
    const optimizers: Record<string, AdamWState> = {};
    for (const [name, optimizer] of Object.entries(parts.optimizers))
      if (optimizer) optimizers[name] = await optimizer.stateDict();
    const adapters = parts.actor.adapters;
    const actor = adapters ? await adapters.stateDict() : await parts.actor.stateDict();
    const critic = parts.critic ? await readAll(criticCheckpointWeights(parts.critic)) : undefined;
    // Assigned last: an error above leaves the previous checkpoint in place.
    this.checkpoint = { state: { ...state }, actor, critic, optimizers };
    // A LoRA run's actor is the start model with the adapters put back (loadAdapters), not a model of its own.
    if (!adapters) this.actors.set(`${this.location}/checkpoint/actor`, actor);
  }

  writeReport(title: string, options: { validationEpisodes?: number } = {}): string {
    this.report = buildReport(this.rows, this.trajectories, { ...options, title });
    return `${this.location}/report.html`;
  }

  openVStarCache() {
    const cache = this.vstar;
    return { get: cache.get.bind(cache), put: cache.put.bind(cache), close() {} };
  }
}

async function readAll(tensors: ReadonlyMap<string, Tensor>): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (const [name, t] of tensors) out.set(name, await t.floats());
  return out;
}
