/**
 * One episode of an agent, played a turn at a time so the page can show each one as it happens. Every
 * turn is what @ragen/rollout's runRollout does for each env of a batch: the prompt from RAGEN's format
 * (Conversation), the policy's sampled ids spliced in, RAGEN's <think>/<answer> parsing and format
 * penalty, and the actions run against the trajectory's action budget.
 */
import { actionBudget, createEnv, type Env } from "@ragen/envs";
import {
  Conversation,
  deservesFormatPenalty,
  instructionText,
  type Policy,
  type PromptFormat,
  parseResponse,
} from "@ragen/rollout";
import type { Tokenizer } from "@ragen/tokenizer";

export interface EpisodeSettings {
  maxTurns: number;
  maxActionsPerTurn: number;
  maxNewTokens: number;
  temperature: number;
  /** Seed of the sampling (each turn derives its own). */
  samplingSeed: number;
  /** Added for a turn whose answer lost actions or had none valid (RAGEN: -0.1). */
  formatPenalty?: number;
}

export interface AgentTurn {
  /** From 1. */
  turn: number;
  /** The state the model was shown. */
  observation: string;
  /** The whole response, "<think>" prefix included. */
  response: string;
  think: string;
  answer: string;
  actions: string[];
  /** The actions that ran (the budget or the episode's end may cut the list). */
  executed: string[];
  /** Step rewards plus the format penalty when charged. */
  reward: number;
  formatPenalized: boolean;
  responseTokens: number;
  /** Wall-clock seconds the policy took. */
  seconds: number;
  /** The state after the turn. */
  stateSvg: string;
  stateText: string;
}

export type EpisodeEnd = "done" | "budget" | "max-turns";

export class AgentEpisode {
  readonly env: Env;
  readonly turns: AgentTurn[] = [];
  /** The preset's per-trajectory action budget (RAGEN's max_actions_per_traj). */
  readonly actionBudget: number;
  actionsUsed = 0;
  success = false;
  private envDone = false;
  private observation: string;
  private readonly conversation: Conversation;
  private readonly format: PromptFormat;

  constructor(
    readonly preset: string,
    readonly seed: number,
    tokenizer: Tokenizer,
    readonly settings: EpisodeSettings,
  ) {
    this.env = createEnv(preset);
    this.actionBudget = actionBudget(preset);
    this.observation = this.env.reset(seed);
    this.format = {
      enableThinking: true,
      maxActionsPerTurn: settings.maxActionsPerTurn,
      maxResponseLength: settings.maxNewTokens,
    };
    this.conversation = new Conversation(
      tokenizer,
      instructionText(this.env.instructions, this.env.actions, settings.maxActionsPerTurn),
      this.format,
    );
  }

  /** Why the episode ended, or undefined while it goes on. */
  get end(): EpisodeEnd | undefined {
    if (this.envDone) return "done";
    if (this.actionsUsed >= this.actionBudget) return "budget";
    if (this.turns.length >= this.settings.maxTurns) return "max-turns";
    return undefined;
  }

  get totalReward(): number {
    return this.turns.reduce((sum, turn) => sum + turn.reward, 0);
  }

  /** Generates one response, parses it and runs its actions. */
  async playTurn(policy: Policy): Promise<AgentTurn> {
    if (this.end !== undefined) throw new Error(`the episode is over (${this.end})`);
    // The policy may keep prompt prefixes between calls; they are only valid within one episode.
    if (this.turns.length === 0) policy.rolloutBoundary?.();
    const observation = this.observation;
    this.conversation.openTurn(observation, this.actionBudget - this.actionsUsed);
    const started = performance.now();
    const [output] = await policy.generate(
      [
        {
          tokens: this.conversation.promptTokens(),
          messages: this.conversation.messages(),
          responsePrefix: this.conversation.responsePrefix,
        },
      ],
      {
        maxNewTokens: this.settings.maxNewTokens,
        temperature: this.settings.temperature,
        seed: (this.settings.samplingSeed * 1_000_003 + this.turns.length * 7919) >>> 0,
      },
    );
    if (!output) throw new Error("the policy returned no output for the prompt");
    const seconds = (performance.now() - started) / 1000;
    const response = this.conversation.recordResponse(output.tokens, output.logProbs);
    const parsed = parseResponse(response, {
      actions: this.env.actions,
      maxActionsPerTurn: this.settings.maxActionsPerTurn,
      enableThinking: true,
    });
    const executed: string[] = [];
    let reward = 0;
    for (const action of parsed.actions) {
      if (this.envDone || this.actionsUsed >= this.actionBudget) break;
      const result = this.env.step(action);
      executed.push(action);
      this.actionsUsed++;
      reward += result.reward;
      this.observation = result.observation;
      if (result.info.success) this.success = true;
      if (result.done) this.envDone = true;
    }
    const formatPenalized = deservesFormatPenalty(parsed);
    if (formatPenalized) reward += this.settings.formatPenalty ?? -0.1;
    this.conversation.recordReward(reward);
    const turn: AgentTurn = {
      turn: this.turns.length + 1,
      observation,
      response,
      think: parsed.think,
      answer: parsed.answer,
      actions: parsed.actions,
      executed,
      reward,
      formatPenalized,
      responseTokens: output.tokens.length,
      seconds,
      stateSvg: this.env.renderSvg(),
      stateText: this.env.render(),
    };
    this.turns.push(turn);
    if (this.end !== undefined) policy.rolloutBoundary?.();
    return turn;
  }
}
