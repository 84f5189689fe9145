import { EnvManager, LocalModelPolicy, runRollout } from "@ragen/rollout";
import { describe, expect, it } from "vitest";
import { AStarPO } from "../src/astar-po.js";
import { MemoryVStarCache, stateKey } from "../src/cache.js";
import { estimateVStarForStates, vstarLookup } from "../src/stage1.js";
import { banditTokenizer, frozenCopy, tinyModel } from "./fixtures.js";

describe("A*-PO on Bandit with a tiny random Qwen2 (CPU)", () => {
  it("estimates V̂* from the reference, then trains the actor on the same start states", async () => {
    const tokenizer = banditTokenizer();
    const actor = tinyModel(tokenizer.vocabSize, 7);
    const reference = await frozenCopy(actor);
    const envs = { envGroups: 2, tags: [{ tag: "Bandit", nGroups: 2 }] };
    const rollout = { maxTurns: 1, maxNewTokens: 6 };
    const steps = 2;

    const estimates = await estimateVStarForStates({
      policy: new LocalModelPolicy(reference, tokenizer),
      tokenizer,
      envs,
      resets: steps,
      referenceModel: "tiny-random-seed-7",
      samples: 4,
      rollout,
      cache: new MemoryVStarCache(),
    });
    expect(estimates.entries.size).toBe(steps * envs.envGroups);
    for (const name of ["vstar/mean", "vstar/pass@4", "vstar/all_zero_fraction", "timing_s/vstar"]) {
      expect(Number.isFinite(estimates.metrics[name]), name).toBe(true);
    }

    const trainer = new AStarPO({ actor, reference, config: { lr: 1e-3, microBatchSize: 1 } });
    const manager = new EnvManager({ ...envs, groupSize: 1 });
    const policy = new LocalModelPolicy(actor, tokenizer);
    for (let step = 0; step < steps; step++) {
      const batch = await runRollout(manager, policy, tokenizer, { ...rollout, seed: 100 + step });
      for (const t of batch.trajectories) expect(estimates.entries.has(stateKey(t.tag, t.seed))).toBe(true);
      const metrics = await trainer.update(batch, vstarLookup(estimates));
      for (const name of [
        "actor/loss",
        "actor/apo_loss",
        "actor/log_ratio_sum",
        "actor/kl",
        "actor/entropy",
        "actor/residual",
        "actor/grad_norm",
        "apo/vstar/mean",
        "timing_s/ref",
        "timing_s/step",
      ]) {
        expect(Number.isFinite(metrics[name]), `${name} at step ${step}`).toBe(true);
      }
      expect(metrics["actor/skipped_steps"]).toBe(0);
      // The first batch is sampled by weights equal to the reference's, so its log-ratio is 0.
      if (step === 0) expect(metrics["actor/log_ratio_sum"]).toBeCloseTo(0, 4);
    }
    expect(manager.trainResets).toBe(steps);
    trainer.dispose();
  });
});
