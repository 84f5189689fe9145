/**
 * LoRA in a training run: the adapters the settings put on the actor (and on the critic's backbone with
 * lora.critic), what a checkpoint keeps of them, and restoring them on resume. The base weights never
 * change, so the KL's reference is the actor with its adapters switched off and a checkpoint needs only
 * the adapters: a LoRA run resumes on the start model (settings.model) with them put back.
 */
import { type LoraOptions, type Qwen2Model, Qwen2ValueModel } from "@ragen/models";
import { noGrad, type Tensor, tensor, writeSlice } from "@ragen/tensor-webgpu";
import type { TrainingSettings } from "../settings/fields.js";
import type { LoraCheckpointState, StoredCheckpoint } from "./storage.js";

/** Whether the run trains LoRA adapters rather than every weight. */
export function usesLora(settings: Pick<TrainingSettings, "lora">): boolean {
  return settings.lora.rank > 0;
}

/** The adapters' options for a model of the run; `part` draws the critic's from another seed. */
export function loraOptions(settings: TrainingSettings, part: "actor" | "critic"): LoraOptions {
  const { rank, alpha, targetModules } = settings.lora;
  return { rank, alpha, targets: targetModules, seed: settings.seed * 2 + (part === "critic" ? 1 : 0) };
}

/** What a LoRA run's checkpoint state records of its settings. */
export function loraCheckpointState(settings: TrainingSettings): LoraCheckpointState {
  const { rank, alpha, targetModules, critic } = settings.lora;
  return { rank, alpha, targets: [...targetModules], critic };
}

/**
 * A resume must train what the checkpoint holds: adapters of the same shape, or every weight. Throws
 * naming the settings that would resume it.
 */
export function checkLoraResume(
  settings: TrainingSettings,
  checkpoint: StoredCheckpoint | undefined,
  location: string,
): void {
  if (!checkpoint) return;
  const saved = checkpoint.state.lora;
  if (!saved) {
    if (usesLora(settings))
      throw new Error(
        `${location} holds a run that trains every weight; resume it with lora.rank=0, or pass outDir=<new folder> for a LoRA run`,
      );
    return;
  }
  const wanted = loraCheckpointState(settings);
  const resumeWith = `lora.rank=${saved.rank} lora.alpha=${saved.alpha} lora.targetModules=${saved.targets.join(",")} lora.critic=${saved.critic}`;
  if (!usesLora(settings))
    throw new Error(
      `${location} holds a LoRA run (rank ${saved.rank}); resume it with ${resumeWith}, or pass outDir=<new folder>`,
    );
  const changed = (["rank", "alpha", "targets", "critic"] as const).filter(
    (key) => JSON.stringify(saved[key]) !== JSON.stringify(wanted[key]),
  );
  if (changed.length > 0)
    throw new Error(
      `${location} holds a LoRA run with other adapters (${changed.map((key) => `${key === "targets" ? "targetModules" : key} ${JSON.stringify(saved[key])}`).join(", ")}); resume it with ${resumeWith}, or pass outDir=<new folder>`,
    );
}

/** Attaches the run's adapters to the actor: fresh ones, or the checkpoint's when the run resumes. */
export async function attachActorAdapters(
  actor: Qwen2Model,
  settings: TrainingSettings,
  checkpoint: StoredCheckpoint | undefined,
): Promise<void> {
  const adapters = actor.attachLora(loraOptions(settings, "actor"));
  if (!checkpoint) return;
  try {
    adapters.load(await adaptersOf(checkpoint, "actor"), "the checkpoint's actor adapter");
  } catch (error) {
    actor.detachLora();
    throw error;
  }
}

/**
 * A critic with adapters on its backbone: a copy of the actor's base weights (as a full critic starts),
 * a new or the checkpoint's score head, and fresh or the checkpoint's adapters.
 */
export async function createLoraCritic(
  actor: Qwen2Model,
  settings: TrainingSettings,
  checkpoint: StoredCheckpoint | undefined,
): Promise<Qwen2ValueModel> {
  // The actor's stateDict holds its base weights; its adapters are apart.
  const critic = await Qwen2ValueModel.fromPolicy(actor, settings.seed, settings.starpo.criticHeadInit);
  try {
    critic.backbone.attachLora(loraOptions(settings, "critic"));
    if (checkpoint) loadCriticTrainables(critic, await adaptersOf(checkpoint, "critic"));
  } catch (error) {
    critic.dispose();
    throw error;
  }
  return critic;
}

function adaptersOf(checkpoint: StoredCheckpoint, part: "actor" | "critic") {
  if (!checkpoint.loadAdapters)
    throw new Error("this run's storage cannot load LoRA adapters from its checkpoint");
  return checkpoint.loadAdapters(part);
}

const SCORE_HEAD = ["score.weight", "score.bias"] as const;

/**
 * What a checkpoint keeps of a critic: with adapters on its backbone, those (by PEFT name) and the
 * score head, which are all that trains; else every weight.
 */
export function criticCheckpointWeights(critic: Qwen2ValueModel): ReadonlyMap<string, Tensor> {
  const adapters = critic.backbone.adapters;
  if (!adapters) return critic.params;
  return new Map([
    ...adapters.peftWeights(),
    ["score.weight", critic.scoreWeight],
    ["score.bias", critic.scoreBias],
  ]);
}

/** Sets a LoRA critic's adapters and score head from a checkpoint's tensors (criticCheckpointWeights'). */
function loadCriticTrainables(critic: Qwen2ValueModel, values: ReadonlyMap<string, Float32Array>): void {
  const source = "the checkpoint's critic";
  const adapterValues = new Map(
    [...values].filter(([name]) => !(SCORE_HEAD as readonly string[]).includes(name)),
  );
  critic.backbone.adapters!.load(adapterValues, source);
  noGrad(() => {
    for (const [name, target] of [
      ["score.weight", critic.scoreWeight],
      ["score.bias", critic.scoreBias],
    ] as const) {
      const saved = values.get(name);
      if (!saved || saved.length !== target.size)
        throw new Error(
          `${source}: ${name} ${saved ? `has ${saved.length} values, not ${target.size}` : "is missing"}`,
        );
      const upload = tensor(saved, target.shape, { backend: target.backend });
      writeSlice(target, upload, 0, 0);
      upload.dispose();
    }
  });
}
