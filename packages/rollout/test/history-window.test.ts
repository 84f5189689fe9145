import { Qwen2Model } from "@ragen/models";
import { createCpuBackend, noGrad } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { EnvManager } from "../src/env-manager.js";
import { LocalModelPolicy } from "../src/local-model-policy.js";
import { ContextOverflowError, RolloutError, runRollout, trainingRows } from "../src/rollout.js";
import { envTokenizer, ScriptedPolicy, scripted } from "./fixtures.js";

const tokenizer = envTokenizer();

// Every turn moves Up into the wall: the episode lasts every turn and each turn scores 0, so the
// format penalty alone (a reply without tags) makes turn rewards differ.
const REPLIES = [
  scripted(tokenizer, " one </think> <answer> Up </answer>", true, -1),
  scripted(tokenizer, "no tags", true, -2),
  scripted(tokenizer, " three </think> <answer> Up </answer>", true, -3),
];

function oneEnv() {
  return new EnvManager({
    envGroups: 1,
    groupSize: 1,
    tags: [{ tag: "FrozenLakeDeterministic", nGroups: 1 }],
  });
}

async function play(options: { historyWindow?: number; rewardPlacement?: "trajectory" | "turn" } = {}) {
  const policy = new ScriptedPolicy((call) => REPLIES[call]!);
  const batch = await runRollout(oneEnv(), policy, tokenizer, { maxNewTokens: 32, maxTurns: 3, ...options });
  return { batch, policy, trajectory: batch.trajectories[0]! };
}

/** The rewards from each sampled token to the end of its sequence (gamma = 1). */
function sampledReturns(tokenRewards: Float32Array, lossMask: Uint8Array): number[] {
  const returns: number[] = [];
  let after = 0;
  for (let i = tokenRewards.length - 1; i >= 0; i--) {
    after += tokenRewards[i]!;
    if (lossMask[i]) returns.unshift(after);
  }
  return returns;
}

describe("training sequences under a history window", () => {
  it("trains the whole chat as one sequence when every prompt is a prefix of it", async () => {
    const { trajectory, policy } = await play();
    expect(trajectory.turns).toHaveLength(3);
    expect(trajectory.trainingSequences).toBeUndefined();
    expect(trainingRows([trajectory])).toEqual([trajectory]);
    // A window as long as the episode drops nothing: the same sequence.
    const wide = await play({ historyWindow: 3 });
    expect(wide.trajectory.trainingSequences).toBeUndefined();
    expect(Array.from(wide.trajectory.tokens)).toEqual(Array.from(trajectory.tokens));
    expect(policy.calls).toHaveLength(3);
  });

  it("trains each turn after exactly the prompt it was sampled from (window 1)", async () => {
    const { trajectory, policy } = await play({ historyWindow: 1 });
    const sequences = trajectory.trainingSequences!;
    expect(sequences.map((s) => [s.firstTurn, s.lastTurn])).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
    ]);
    for (const [turn, sequence] of sequences.entries()) {
      const prompt = policy.calls[turn]!.prompts[0]!.tokens;
      const reply = REPLIES[turn]!;
      expect(Array.from(sequence.tokens)).toEqual([...prompt, ...reply.tokens]);
      expect(Array.from(sequence.lossMask)).toEqual([
        ...new Array(prompt.length).fill(0),
        ...new Array(reply.tokens.length).fill(1),
      ]);
      expect(Array.from(sequence.oldLogProbs)).toEqual([
        ...new Array(prompt.length).fill(0),
        ...reply.logProbs,
      ]);
    }
    // The windowed prompts really are shorter than the chat before the turn.
    const chatBeforeTurn3 = trajectory.tokens.length - REPLIES[2]!.tokens.length;
    expect(policy.calls[2]!.prompts[0]!.tokens.length).toBeLessThan(chatBeforeTurn3);
  });

  it("keeps turns together while their prompts extend each other (window 2)", async () => {
    const { trajectory, policy } = await play({ historyWindow: 2 });
    const [first, second] = trajectory.trainingSequences!;
    expect(trajectory.trainingSequences).toHaveLength(2);
    expect([first!.firstTurn, first!.lastTurn, second!.firstTurn, second!.lastTurn]).toEqual([0, 1, 2, 2]);
    const turn2Prompt = policy.calls[1]!.prompts[0]!.tokens;
    expect(Array.from(first!.tokens)).toEqual([...turn2Prompt, ...REPLIES[1]!.tokens]);
    const turn3Prompt = policy.calls[2]!.prompts[0]!.tokens;
    expect(Array.from(second!.tokens)).toEqual([...turn3Prompt, ...REPLIES[2]!.tokens]);
    // Every sampled token is trained exactly once.
    const sampled = (mask: Uint8Array) => mask.reduce((n, m) => n + m, 0);
    expect(sampled(first!.lossMask) + sampled(second!.lossMask)).toBe(trajectory.responseLength);
  });

  it("places rewards so every sampled token keeps the return it has in the whole chat", async () => {
    for (const rewardPlacement of ["trajectory", "turn"] as const) {
      const whole = (await play({ rewardPlacement })).trajectory;
      expect(whole.turns.map((t) => t.reward)).toEqual([0, -0.1, 0]);
      for (const historyWindow of [1, 2]) {
        const { trajectory } = await play({ historyWindow, rewardPlacement });
        const split = trajectory.trainingSequences!.flatMap((s) =>
          sampledReturns(s.tokenRewards, s.lossMask),
        );
        const expected = sampledReturns(whole.tokenRewards, whole.lossMask);
        expect(split).toHaveLength(expected.length);
        for (const [i, r] of split.entries())
          expect(r, `${rewardPlacement}, window ${historyWindow}`).toBeCloseTo(expected[i]!);
      }
    }
    // "turn": the second turn's penalty sits on its own last token in its own sequence.
    const { trajectory } = await play({ historyWindow: 1, rewardPlacement: "turn" });
    const second = trajectory.trainingSequences![1]!;
    expect(second.tokenRewards.at(-1)).toBeCloseTo(-0.1);
  });

  it("gives an update one row per sequence, with the episode's reward, group and tag", async () => {
    const { batch, trajectory } = await play({ historyWindow: 1 });
    const rows = trainingRows(batch.trajectories);
    expect(rows).toHaveLength(3);
    for (const [i, row] of rows.entries()) {
      expect(row.tokens).toBe(trajectory.trainingSequences![i]!.tokens);
      expect(row).toMatchObject({ reward: trajectory.reward, groupId: 0, tag: "FrozenLakeDeterministic" });
      expect(row.turns).toEqual([trajectory.turns[i]]);
      expect(row.responseLength).toBe(REPLIES[i]!.tokens.length);
      expect(row.trainingSequences).toBeUndefined();
    }
    // Metrics count episodes, not rows.
    expect(batch.metrics["train/FrozenLakeDeterministic/num_actions"]).toBe(2);
    // The rows carry the episode's version; importance weights belong on rows, not on the split episode.
    expect(trainingRows([{ ...trajectory, policyVersion: 3 }]).map((row) => row.policyVersion)).toEqual([
      3, 3, 3,
    ]);
    const weighted = { ...trajectory, importanceWeights: new Float32Array(trajectory.tokens.length).fill(1) };
    expect(() => trainingRows([weighted])).toThrow(RolloutError);
  });

  it("recomputes the sampler's log-probs on every trained sequence of a real model", async () => {
    const vocab = envTokenizer(320);
    const model = Qwen2Model.random(
      {
        vocabSize: vocab.vocabSize,
        hiddenSize: 32,
        intermediateSize: 64,
        numHiddenLayers: 1,
        numAttentionHeads: 4,
        numKeyValueHeads: 2,
        rmsNormEps: 1e-6,
        ropeTheta: 10000,
        tieWordEmbeddings: true,
        initializerRange: 0.3,
      },
      4,
      createCpuBackend(),
    );
    const manager = new EnvManager({ envGroups: 2, groupSize: 1, tags: [{ tag: "FrozenLake", nGroups: 2 }] });
    const temperature = 0.7;
    const batch = await runRollout(manager, new LocalModelPolicy(model, vocab), vocab, {
      maxTurns: 3,
      maxNewTokens: 5,
      historyWindow: 1,
      temperature,
      topP: 0.9,
      topK: 20,
      seed: 3,
    });
    const worst = async (tokens: Int32Array, mask: Uint8Array, old: Float32Array) => {
      const n = tokens.length - 1;
      const { logProbs } = noGrad(() =>
        model.sequenceLogProbs(
          { ids: tokens.subarray(0, n), batch: 1, seqLen: n },
          tokens.subarray(1),
          temperature,
        ),
      );
      const recomputed = await logProbs.floats();
      let gap = 0;
      for (let t = 1; t < tokens.length; t++)
        if (mask[t]) gap = Math.max(gap, Math.abs(recomputed[t - 1]! - old[t]!));
      return gap;
    };
    let rows = 0;
    for (const row of trainingRows(batch.trajectories)) {
      rows++;
      expect(await worst(row.tokens, row.lossMask, row.oldLogProbs)).toBeLessThan(1e-4);
    }
    expect(rows).toBeGreaterThan(batch.trajectories.length);
    // The whole chat is not the context later turns were sampled in: its log-probs differ.
    const chatGaps = await Promise.all(
      batch.trajectories.map((t) => worst(t.tokens, t.lossMask, t.oldLogProbs)),
    );
    expect(Math.max(...chatGaps)).toBeGreaterThan(1e-3);
  });
});

describe("the context limit", () => {
  it("ends the episode before a turn that would not fit, or throws naming the env with contextOverflow error", async () => {
    const first = await play();
    const turnTwoPrompt = first.policy.calls[1]!.prompts[0]!.tokens.length;
    const limit = turnTwoPrompt + 31;
    const policy = new ScriptedPolicy((call) => REPLIES[call]!);
    const truncated = await runRollout(oneEnv(), policy, tokenizer, {
      maxNewTokens: 32,
      maxTurns: 3,
      maxSequenceLength: limit,
    });
    expect(truncated.trajectories[0]!.turns).toHaveLength(1);
    expect(truncated.trajectories[0]!.finishReason).toBe("context");
    expect(truncated.trajectories[0]!.tokens.length).toBeLessThanOrEqual(limit);

    const error = await runRollout(oneEnv(), new ScriptedPolicy((call) => REPLIES[call]!), tokenizer, {
      maxNewTokens: 32,
      maxTurns: 3,
      maxSequenceLength: limit,
      contextOverflow: "error",
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ContextOverflowError);
    expect(error).toMatchObject({ turn: 2, promptTokens: turnTwoPrompt, maxSequenceLength: limit });
    expect(String(error)).toMatch(
      /FrozenLakeDeterministic env \(seed 10000\), turn 2: .* context limit of \d+ tokens/,
    );

    // A window keeps prompts short, so the same limit lets the episode play every turn.
    const windowed = await runRollout(oneEnv(), new ScriptedPolicy((call) => REPLIES[call]!), tokenizer, {
      maxNewTokens: 32,
      maxTurns: 3,
      maxSequenceLength: first.policy.calls[0]!.prompts[0]!.tokens.length + 32,
      historyWindow: 1,
      contextOverflow: "error",
    });
    expect(windowed.trajectories[0]!.turns).toHaveLength(3);
  });

  it("refuses options outside their range before anything is sampled", async () => {
    const policy = new ScriptedPolicy((call) => REPLIES[call]!);
    for (const [options, message] of [
      [{ historyWindow: 0 }, /historyWindow must be a positive integer, got 0/],
      [{ maxSequenceLength: 1.5 }, /maxSequenceLength must be a positive integer/],
      [{ contextOverflow: "drop" }, /contextOverflow must be one of truncate, error, got "drop"/],
      [{ rewardPlacement: "step" }, /rewardPlacement must be one of trajectory, turn/],
    ] as const) {
      await expect(
        runRollout(oneEnv(), policy, tokenizer, { maxNewTokens: 8, ...(options as object) }),
      ).rejects.toThrow(message);
    }
    expect(policy.calls).toHaveLength(0);
    await expect(runRollout(oneEnv(), policy, tokenizer, { maxNewTokens: 0 })).rejects.toThrow(RolloutError);
  });
});
