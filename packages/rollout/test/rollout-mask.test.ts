import { describe, expect, it } from "vitest";
import { EnvManager } from "../src/env-manager.js";
import { buildChatMessages, instructionText } from "../src/prompt.js";
import { batchMetrics, RolloutError, runRollout, type Trajectory } from "../src/rollout.js";
import { envTokenizer, ScriptedPolicy, scripted } from "./fixtures.js";

const tokenizer = envTokenizer();
const thinkId = tokenizer.encode("<think>")[0]!;
const imEnd = tokenizer.imEndId!;

// Env 0 and env 1 share seed 10000 (P at row 0 col 1, goal at row 2 col 3, deterministic moves).
const RESPONSES = [
  [
    scripted(tokenizer, " plan </think> <answer> Right </answer>", true, -1),
    scripted(tokenizer, " hmm </think> <answer> Jump </answer> and more", false, -2), // cut at the length limit
  ],
  [
    scripted(tokenizer, " go </think> <answer> Right || Down || Down </answer>", true, -3),
    scripted(tokenizer, "no tags at all", true, -4),
  ],
];

function twoEnvs() {
  return new EnvManager({
    envGroups: 1,
    groupSize: 2,
    tags: [{ tag: "FrozenLakeDeterministic", nGroups: 1 }],
  });
}

async function rollout(rewardPlacement: "trajectory" | "turn" = "trajectory") {
  const policy = new ScriptedPolicy((call, prompt) => RESPONSES[call]![prompt]!);
  const batch = await runRollout(twoEnvs(), policy, tokenizer, {
    maxNewTokens: 32,
    maxTurns: 2,
    rewardPlacement,
    seed: 5,
  });
  return { batch, policy };
}

/** Runs of mask 1 as [start, end) pairs. */
function maskRuns(mask: Uint8Array): [number, number][] {
  const runs: [number, number][] = [];
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] === 1 && (i === 0 || mask[i - 1] === 0)) runs.push([i, i]);
    if (mask[i] === 1) runs.at(-1)![1] = i + 1;
  }
  return runs;
}

describe("runRollout loss mask, token by token", () => {
  it("marks exactly the sampled ids, right after each prompt, and nothing else", async () => {
    const { batch, policy } = await rollout();
    for (const [env, trajectory] of batch.trajectories.entries()) {
      const expectedMask = new Uint8Array(trajectory.tokens.length);
      const expectedLogProbs = new Float32Array(trajectory.tokens.length);
      for (const [turn, call] of policy.calls.entries()) {
        const prompt = call.prompts[env]!.tokens;
        const output = RESPONSES[turn]![env]!;
        // The prompt the policy saw is a prefix of the final sequence and ends with the literal <think>.
        expect(Array.from(trajectory.tokens.subarray(0, prompt.length))).toEqual(Array.from(prompt));
        expect(prompt.at(-1)).toBe(thinkId);
        expect(
          Array.from(trajectory.tokens.subarray(prompt.length, prompt.length + output.tokens.length)),
        ).toEqual(Array.from(output.tokens));
        expectedMask.fill(1, prompt.length, prompt.length + output.tokens.length);
        expectedLogProbs.set(output.logProbs, prompt.length);
      }
      expect(Array.from(trajectory.lossMask)).toEqual(Array.from(expectedMask));
      expect(Array.from(trajectory.oldLogProbs)).toEqual(Array.from(expectedLogProbs));
      expect(maskRuns(trajectory.lossMask)).toHaveLength(2);
      // The sequence ends on the last sampled token.
      expect(trajectory.lossMask.at(-1)).toBe(1);
    }
  });

  it("decodes to the chat template's text, with no doubled or missing <|im_end|>", async () => {
    const { batch } = await rollout();
    for (const trajectory of batch.trajectories) {
      const slotActions = ["Left", "Down", "Right", "Up"];
      const instructions = instructionText(
        (await import("@ragen/envs")).createEnv("FrozenLakeDeterministic").instructions,
        slotActions,
        5,
      );
      const messages = buildChatMessages(
        instructions,
        trajectory.turns.map((turn, i) => ({
          observation: turn.observation,
          actionsLeft: 10 - trajectory.turns.slice(0, i).reduce((n, t) => n + t.executed.length, 0),
          response: tokenizer.decode(RESPONSES[i]![trajectory.index]!.tokens, { skipSpecialTokens: true }),
          reward: turn.reward,
        })),
        { enableThinking: true, maxActionsPerTurn: 5, maxResponseLength: 32 },
      );
      const full = tokenizer.applyChatTemplate(messages);
      const lastEnds = RESPONSES[trajectory.turns.length - 1]![trajectory.index]!.tokens.at(-1) === imEnd;
      // The template closes the last turn with "<|im_end|>\n"; the sequence stops at the sampled stop token.
      const expected = full.slice(0, full.length - (lastEnds ? "\n".length : "<|im_end|>\n".length));
      expect(tokenizer.decode(trajectory.tokens)).toBe(expected);
      const imEnds = Array.from(trajectory.tokens).filter((id) => id === imEnd).length;
      expect(imEnds).toBe(full.split("<|im_end|>").length - 1);
    }
    // Env 1's first reply hit the length limit: the template's <|im_end|> follows it, unmasked.
    const cut = batch.trajectories[1]!;
    const firstRunEnd = maskRuns(cut.lossMask)[0]![1];
    expect(cut.tokens[firstRunEnd]).toBe(imEnd);
    expect(cut.lossMask[firstRunEnd]).toBe(0);
    // Env 0's first reply ended on its own <|im_end|>: it is masked in and not repeated.
    const stopped = batch.trajectories[0]!;
    const stoppedRunEnd = maskRuns(stopped.lossMask)[0]![1];
    expect(stopped.tokens[stoppedRunEnd - 1]).toBe(imEnd);
    expect(stopped.tokens[stoppedRunEnd]).not.toBe(imEnd);
  });
});

describe("runRollout rewards and records", () => {
  it("scores turns with format penalties and places the total on the last sampled token", async () => {
    const { batch } = await rollout();
    const [solved, failed] = batch.trajectories as [Trajectory, Trajectory];
    expect(solved.turns.map((t) => [t.actions, t.executed, t.reward, t.formatPenalized])).toEqual([
      [["Right"], ["Right"], 0, false],
      [["Right", "Down", "Down"], ["Right", "Down", "Down"], 1, false],
    ]);
    expect(solved).toMatchObject({
      success: true,
      reward: 1,
      numActions: 4,
      finishReason: "done",
      actionIsValid: 1,
    });
    expect(failed.turns.map((t) => [t.actions, t.reward])).toEqual([
      [[], -0.1],
      [[], -0.1],
    ]);
    expect(failed).toMatchObject({ success: false, numActions: 0, finishReason: "max-turns" });
    expect(failed.reward).toBeCloseTo(-0.2);
    expect(failed.turns[0]!.think).toBe("hmm");
    expect(solved.turns[1]!.observation).toBe("__P_\n____\n_OOG\n____");
    for (const t of [solved, failed]) {
      const nonZero = [...t.tokenRewards.keys()].filter((i) => t.tokenRewards[i] !== 0);
      expect(nonZero).toEqual([t.tokens.length - 1]);
      expect(t.tokenRewards[t.tokens.length - 1]).toBeCloseTo(t.reward);
    }
    expect(batch.metrics["train/FrozenLakeDeterministic/success"]).toBe(0.5);
    expect(batch.metrics["train/FrozenLakeDeterministic/pass@2"]).toBe(1);
    expect(batch.metrics["train/FrozenLakeDeterministic/num_actions"]).toBe(2);
    // Two of the four turns took the penalty, all of them the failed env's.
    expect(batch.metrics["train/FrozenLakeDeterministic/format_penalty_rate"]).toBe(0.5);
    expect(batch.metrics["train/format_penalty_rate"]).toBe(0.5);
  });

  it("reports the format-penalty rate per env beside the batch's", () => {
    const turns = (...penalized: boolean[]) => penalized.map((formatPenalized) => ({ formatPenalized }));
    const trajectory = (tag: string, ...penalized: boolean[]) =>
      ({ tag, groupId: 0, success: false, turns: turns(...penalized) }) as unknown as Trajectory;
    const metrics = batchMetrics("val", [
      trajectory("Bandit", true, true),
      trajectory("FrozenLake", false, false, false, true),
    ]);
    expect(metrics["val-env/Bandit/format_penalty_rate"]).toBe(1);
    expect(metrics["val-env/FrozenLake/format_penalty_rate"]).toBe(0.25);
    expect(metrics["val-env/format_penalty_rate"]).toBe(0.5);
  });

  it("can place each turn's reward on that turn's last sampled token", async () => {
    const { batch } = await rollout("turn");
    const failed = batch.trajectories[1]!;
    const runEnds = maskRuns(failed.lossMask).map(([, end]) => end - 1);
    const nonZero = [...failed.tokenRewards.keys()].filter((i) => failed.tokenRewards[i] !== 0);
    expect(nonZero).toEqual(runEnds);
    for (const i of runEnds) expect(failed.tokenRewards[i]).toBeCloseTo(-0.1);
  });

  it("drops finished envs from later turns and derives a fresh seed per turn", async () => {
    const policy = new ScriptedPolicy((call, prompt) =>
      call === 0 && prompt === 0
        ? RESPONSES[1]![0]!
        : scripted(tokenizer, " x </think><answer>Up</answer>", true),
    );
    await runRollout(twoEnvs(), policy, tokenizer, { maxNewTokens: 32, maxTurns: 3 });
    expect(policy.calls.map((c) => c.prompts.length)).toEqual([2, 1, 1]);
    expect(new Set(policy.calls.map((c) => c.sampling.seed)).size).toBe(3);
  });

  it("stops an env whose context is full instead of overflowing", async () => {
    const policy = new ScriptedPolicy(() => RESPONSES[0]![0]!);
    const first = await runRollout(twoEnvs(), policy, tokenizer, { maxNewTokens: 32, maxTurns: 5 });
    const turnOneLength = policy.calls[0]!.prompts[0]!.tokens.length;
    const limited = new ScriptedPolicy(() => RESPONSES[0]![0]!);
    const batch = await runRollout(twoEnvs(), limited, tokenizer, {
      maxNewTokens: 32,
      maxTurns: 5,
      maxSequenceLength: turnOneLength + 40,
    });
    expect(first.trajectories[0]!.turns.length).toBeGreaterThan(1);
    expect(batch.trajectories[0]!.turns).toHaveLength(1);
    expect(batch.trajectories[0]!.finishReason).toBe("context");
  });

  it("reads a sampled id no token has (a model's padding row) as no text, keeping the exact ids", async () => {
    const answer = scripted(tokenizer, " go </think> <answer> Right </answer>", true);
    const padding = tokenizer.vocabSize + 7;
    const tokens = Int32Array.from([padding, ...answer.tokens]);
    const policy = new ScriptedPolicy(() => ({ tokens, logProbs: new Float32Array(tokens.length) }));
    const batch = await runRollout(twoEnvs(), policy, tokenizer, { maxNewTokens: 32, maxTurns: 1 });
    const trajectory = batch.trajectories[0]!;
    expect(trajectory.turns[0]!.actions).toEqual(["Right"]);
    expect([...trajectory.tokens]).toContain(padding);
  });

  it("rejects a policy that breaks its contract with a clear error", async () => {
    const short = new ScriptedPolicy(() => ({ tokens: Int32Array.of(1, 2), logProbs: Float32Array.of(0) }));
    await expect(runRollout(twoEnvs(), short, tokenizer, { maxNewTokens: 8 })).rejects.toThrow(RolloutError);
  });
});
