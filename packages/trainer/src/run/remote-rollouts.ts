/**
 * Remote rollouts: training and validation episodes sampled on vLLM or SGLang replicas that keep the
 * base model and swap in the actor's LoRA adapter after each update. After update n the learner writes
 * the adapter (PEFT layout) as `<outDir>/adapters/<name>@<n>/`, loads it on every replica
 * (AdapterPublisher) and starts new episodes on it; version 0 is the base model. Every trajectory
 * records the version that sampled it, and the update corrects for the sampler (off-policy.ts).
 *
 * With rollout.maxStaleness k ≥ 1 a producer samples ahead while the learner updates: batch s is
 * sampled with version s − 1 − k, as soon as the learner has published it, so a batch is exactly k
 * versions old when it is trained and at most k finished batches wait (AReaL bounds staleness the same
 * way: generation pauses rather than producing samples that would be thrown away). The version a batch
 * samples with depends on its step alone, never on which side ran faster, so a seeded run samples the
 * same tokens every time, and a resumed one those of the unbroken run: a checkpoint keeps the adapter
 * folders of the k versions before it. An adapter is switched only between rollouts, so all of an
 * episode's turns come from one version. With k = 0 each batch is sampled when the learner asks for it,
 * with the newest adapter.
 */
import type { Qwen2Model } from "@ragen/models";
import {
  AdapterPublisher,
  adapterId,
  type EnvManager,
  type RemoteTokenPolicy,
  runRollout,
  SglangGeneratePolicy,
  type TrajectoryBatch,
  VllmCompletionsPolicy,
} from "@ragen/rollout";
import type { Tokenizer } from "@ragen/tokenizer";
import type { TrainingSettings } from "../settings/fields.js";
import { AdapterVersions, correctForSampler, targetLogProbs } from "./off-policy.js";
import type { RunStorage } from "./storage.js";
import { rolloutOptions, trainingSeed } from "./validation.js";

/** Whether the settings sample on inference servers. */
export function usesRemoteEngine(settings: Pick<TrainingSettings, "rollout">): boolean {
  return settings.rollout.engine !== "local";
}

/**
 * The adapter's name on the servers for a run kept at `location`: the folder's name (what a person
 * reading the servers' model list recognises) and a hash of the whole location, so runs in folders of
 * the same name do not unload each other's versions.
 */
export function adapterNameFor(location: string): string {
  const base =
    location
      .replace(/[\\/]+$/, "")
      .split(/[\\/]/)
      .at(-1) || "run";
  let hash = 0x811c9dc5;
  for (let i = 0; i < location.length; i++) hash = Math.imul(hash ^ location.charCodeAt(i), 0x01000193);
  return `${base.replace(/[^A-Za-z0-9._-]/g, "-")}-${(hash >>> 0).toString(16).padStart(8, "0")}`;
}

/** A training batch sampled on the servers. */
export interface RemoteBatch {
  batch: TrajectoryBatch;
  /** The adapter version that sampled it (0: the base model). */
  version: number;
  /** The env manager's training resets after its rollout: what a checkpoint after its step records. */
  trainResets: number;
  /** Seconds its rollout took. */
  genSeconds: number;
}

export interface RemoteRolloutsContext {
  settings: TrainingSettings;
  storage: RunStorage;
  /** The actor, with its LoRA adapters attached. */
  actor: Qwen2Model;
  tokenizer: Tokenizer;
  /** The training envs, positioned where the run resumes. */
  manager: EnvManager;
  /** The learner's version at the start: the checkpoint's step (0: the base model, a new run). */
  startVersion: number;
  say: (line: string) => void;
}

export class RemoteRollouts {
  /** The adapter's name on the servers; version v is served as `${name}@${v}`. */
  readonly name: string;
  /** Samples validation episodes with the newest version. */
  readonly validationPolicy: RemoteTokenPolicy;
  private readonly policy: RemoteTokenPolicy;
  private readonly publisher: AdapterPublisher;
  private readonly versions: AdapterVersions;
  private readonly maxStaleness: number;
  /** The newest version published: what new episodes sample with. */
  private version: number;
  /** The oldest version the next batches may sample with (above s − k only when a resume lacks folders). */
  private oldestSampled = 0;
  /** Versions whose folders the last checkpoint needs to resume from: kept past the staleness window. */
  private pinned = new Set<number>();
  private readonly ready = new Map<number, RemoteBatch>();
  private inFlight: { step: number; version: number } | undefined;
  private failure: { error: unknown } | undefined;
  private stopped = false;
  private producer: Promise<void> | undefined;
  private waiters: (() => void)[] = [];

  private constructor(private readonly context: RemoteRolloutsContext) {
    const { settings, storage, actor, tokenizer } = context;
    if (!storage.writeAdapter || !storage.listAdapters || !storage.removeAdapter)
      throw new Error(
        `rollout.engine=${settings.rollout.engine} writes every adapter version into the run folder for the servers to load: ${storage.location} has no folders (train with a NodeRunStorage, as ragen train does)`,
      );
    if (!actor.adapters)
      throw new Error(
        `rollout.engine=${settings.rollout.engine} publishes the actor's LoRA adapter: attach it first (lora.rank above 0)`,
      );
    this.name = adapterNameFor(storage.location);
    this.maxStaleness = settings.rollout.maxStaleness;
    this.version = context.startVersion;
    this.versions = new AdapterVersions(actor.adapters);
    const replicas = settings.rollout.servers ?? [];
    this.publisher = new AdapterPublisher({
      replicas,
      server: settings.rollout.engine === "sglang" ? "sglang" : "vllm",
      remotePath: settings.rollout.adapterPath,
      // The versions a queued batch may have been sampled with stay loaded besides the newest.
      keepStale: this.maxStaleness,
    });
    // Validation has its own pool: its rollouts' boundaries must not forget the training episodes' replicas.
    this.policy = remotePolicy(settings, tokenizer);
    this.validationPolicy = remotePolicy(settings, tokenizer);
  }

  /**
   * Takes this run's versions off the servers and out of the run folder (an earlier attempt's, whose
   * weights may differ from what this attempt publishes under the same version), publishes the version
   * the run resumes from, and starts the producer when k ≥ 1. Samples steps `firstStep` to `lastStep`.
   */
  static async start(
    context: RemoteRolloutsContext,
    firstStep: number,
    lastStep: number,
  ): Promise<RemoteRollouts> {
    const remote = new RemoteRollouts(context);
    try {
      await remote.prepare();
    } catch (error) {
      await remote.close({ wait: false });
      throw error;
    }
    if (remote.maxStaleness > 0) {
      remote.producer = remote.produce(firstStep, lastStep).catch((error: unknown) => {
        remote.failure = { error };
        remote.notify();
      });
    }
    return remote;
  }

  private async prepare(): Promise<void> {
    const { storage, say, startVersion } = this.context;
    const left = await this.publisher.unloadAll(this.name);
    if (left.length > 0)
      say(`unloaded ${left.join(", ")}, left on the servers by an earlier attempt of this run`);
    // The k versions before the checkpoint's sample the first batches after it, as they did in the
    // unbroken run; their folders are the checkpoint's (later versions may differ and are removed).
    const earlier = await this.restoreEarlierVersions();
    const restored = new Set(earlier.map(({ version }) => adapterId(this.name, version)));
    for (const id of storage.listAdapters!()) if (!restored.has(id)) storage.removeAdapter!(id);
    for (const { version, weights, path } of earlier) {
      this.versions.keep(version, weights);
      if (path) await this.publisher.publish(this.name, version, path);
    }
    await this.versions.record(startVersion, startVersion - this.maxStaleness);
    if (startVersion > 0) await this.writeAndPublish(startVersion);
    // Until the next checkpoint, a second resume needs the same folders.
    if (this.oldestSampled < startVersion) this.checkpointed(startVersion);
    const served = this.served(startVersion);
    this.policy.useAdapter(served);
    this.validationPolicy.useAdapter(served);
    const { settings } = this.context;
    say(
      `rollouts on ${settings.rollout.servers?.length} ${settings.rollout.engine} server(s) as ${this.name}@<version>, from version ${startVersion}${startVersion === 0 ? " (the base model)" : ""}; ${this.maxStaleness === 0 ? "synchronous" : `at most ${this.maxStaleness} version(s) stale`}`,
    );
  }

  /**
   * The versions from max(0, start − k) to start − 1 with their weights and folders (version 0, the base
   * model, is the adapters with B at zero, and has no folder). Where a folder is missing (a checkpoint
   * written before folders were kept, or a larger k than the run had), the run samples from the
   * checkpoint's version on and says that it does not replay the unbroken run.
   */
  private async restoreEarlierVersions(): Promise<
    { version: number; weights: Map<string, Float32Array>; path?: string }[]
  > {
    const { storage, say, startVersion, actor } = this.context;
    const first = Math.max(0, startVersion - this.maxStaleness);
    this.oldestSampled = first;
    if (startVersion === 0) return [];
    const present = new Set(storage.listAdapters!());
    const earlier = [];
    for (let version = first; version < startVersion; version++) {
      if (version === 0) {
        earlier.push({ version, weights: baseModelWeights(await actor.adapters!.stateDict()) });
        continue;
      }
      const id = adapterId(this.name, version);
      if (!present.has(id) || !storage.readAdapter) {
        this.oldestSampled = startVersion;
        say(
          `resuming from version ${startVersion} without the folder of ${id}: the next batches sample with version ${startVersion}, not with the versions the unbroken run used`,
        );
        return [];
      }
      earlier.push({ version, weights: await storage.readAdapter(id), path: storage.adapterPath!(id) });
    }
    return earlier;
  }

  /**
   * After a checkpoint of `step` is saved: the folders of its version and the k before it stay until
   * the next checkpoint, so a resume from it samples as the unbroken run did.
   */
  checkpointed(step: number): void {
    this.pinned = new Set(
      Array.from({ length: this.maxStaleness + 1 }, (_, i) => step - i).filter((v) => v > 0),
    );
    this.removeUnneededFolders();
  }

  /** Removes the adapter folders no queued batch and no resume from the last checkpoint can need. */
  private removeUnneededFolders(): void {
    const { storage } = this.context;
    for (const id of storage.listAdapters!()) {
      const old = Number(id.slice(id.lastIndexOf("@") + 1));
      if (!(Number.isInteger(old) && (old >= this.version - this.maxStaleness || this.pinned.has(old))))
        storage.removeAdapter!(id);
    }
  }

  /** The batch of training step `step`: sampled now (k = 0), or by the producer. */
  async take(step: number): Promise<RemoteBatch & { waitSeconds: number; versionsInFlight: number }> {
    const start = performance.now();
    if (this.maxStaleness === 0) {
      const sampled = await this.sample(step);
      return { ...sampled, waitSeconds: sampled.genSeconds, versionsInFlight: 1 };
    }
    await this.until(() => this.ready.has(step) || this.failure !== undefined || this.stopped);
    const taken = this.ready.get(step);
    if (!taken) {
      if (this.failure) throw this.failure.error;
      throw new Error(`step ${step}: remote rollouts were closed before its batch was sampled`);
    }
    this.ready.delete(step);
    // The versions sampled but not trained yet: this batch's, the queue's and the one being sampled.
    const inFlight = new Set([
      taken.version,
      ...[...this.ready.values()].map((b) => b.version),
      ...(this.inFlight ? [this.inFlight.version] : []),
    ]);
    return { ...taken, waitSeconds: (performance.now() - start) / 1000, versionsInFlight: inFlight.size };
  }

  /**
   * What the update trains on for `rollout`: the fresh trajectories' rows with the learner's own
   * behaviour log-probs and truncated importance weights, and the step's rollout/* metrics.
   */
  async correct(
    rollout: TrajectoryBatch,
  ): Promise<{ batch: TrajectoryBatch; metrics: Record<string, number> }> {
    const { settings, actor } = this.context;
    const start = performance.now();
    const { rows, metrics } = await correctForSampler(rollout.trajectories, {
      learnerVersion: this.version,
      maxStaleness: this.maxStaleness,
      importanceCap: settings.rollout.importanceCap,
      behaviourLogProbs: (version, group) =>
        this.versions.withVersion(version, () =>
          targetLogProbs(actor, group, settings.starpo.microBatchSize, settings.rollout.temperature),
        ),
    });
    metrics["timing_s/old_log_prob"] = (performance.now() - start) / 1000;
    return { batch: { ...rollout, trajectories: rows }, metrics };
  }

  /**
   * After the update that made `version`: records its weights, writes and publishes its adapter, drops
   * the versions no queued batch can need, and switches new episodes (and validation) to it.
   */
  async publish(version: number): Promise<Record<string, number>> {
    const start = performance.now();
    await this.versions.record(version, version - this.maxStaleness);
    await this.writeAndPublish(version);
    this.version = version;
    this.removeUnneededFolders();
    this.validationPolicy.useAdapter(this.served(version));
    this.notify();
    return { "timing_s/publish": (performance.now() - start) / 1000 };
  }

  /** Stops the producer (after its rollout in flight when `wait`) and the policies' health probes. */
  async close(options: { wait: boolean }): Promise<void> {
    this.stopped = true;
    this.notify();
    if (options.wait) await this.producer;
    this.policy.close();
    this.validationPolicy.close();
  }

  private async writeAndPublish(version: number): Promise<void> {
    const { storage, actor, settings } = this.context;
    const path = await storage.writeAdapter!(adapterId(this.name, version), actor.adapters!, settings.model);
    await this.publisher.publish(this.name, version, path);
  }

  private served(version: number): string | undefined {
    return version === 0 ? undefined : adapterId(this.name, version);
  }

  private async sample(step: number): Promise<RemoteBatch> {
    const { settings, manager, tokenizer } = this.context;
    const version = this.samplingVersion(step);
    // Switched between rollouts only, so every turn of an episode comes from one version.
    this.policy.useAdapter(this.served(version));
    this.inFlight = { step, version };
    const start = performance.now();
    try {
      const batch = await runRollout(
        manager,
        this.policy,
        tokenizer,
        rolloutOptions(settings, "train", trainingSeed(settings, step)),
      );
      for (const trajectory of batch.trajectories) trajectory.policyVersion = version;
      return {
        batch,
        version,
        trainResets: manager.trainResets,
        genSeconds: (performance.now() - start) / 1000,
      };
    } finally {
      this.inFlight = undefined;
    }
  }

  /** The version batch `step` samples with: k behind the learner's at its update, fixed by the step. */
  private samplingVersion(step: number): number {
    const version = Math.max(this.oldestSampled, step - 1 - this.maxStaleness);
    if (version > this.version)
      throw new Error(`step ${step}: version ${version} is not published yet (newest ${this.version})`);
    return version;
  }

  private async produce(firstStep: number, lastStep: number): Promise<void> {
    for (let step = firstStep; step <= lastStep; step++) {
      await this.until(
        () => this.stopped || this.version >= Math.max(this.oldestSampled, step - 1 - this.maxStaleness),
      );
      if (this.stopped) return;
      const sampled = await this.sample(step);
      if (this.stopped) return;
      this.ready.set(step, sampled);
      this.notify();
    }
  }

  private notify(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private async until(condition: () => boolean): Promise<void> {
    while (!condition()) await new Promise<void>((wake) => this.waiters.push(wake));
  }
}

/** The base model as adapter weights: every B at zero, so the adapters add nothing whatever A holds. */
function baseModelWeights(weights: Map<string, Float32Array>): Map<string, Float32Array> {
  return new Map(
    [...weights].map(([name, values]) => [
      name,
      name.includes("lora_B") ? new Float32Array(values.length) : values,
    ]),
  );
}

function remotePolicy(settings: TrainingSettings, tokenizer: Tokenizer): RemoteTokenPolicy {
  const replicas = settings.rollout.servers ?? [];
  return settings.rollout.engine === "sglang"
    ? new SglangGeneratePolicy({ replicas, tokenizer })
    : new VllmCompletionsPolicy({
        replicas,
        tokenizer,
        model: settings.rollout.servedModel ?? settings.model,
      });
}
