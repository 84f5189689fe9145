/**
 * "Watch the agent play": loads the checkpoint trained for the chosen env onto the page's WebGPU
 * device, then plays the same start state as the person, a turn at a time, showing each turn's
 * <think> text, the action and the state it led to.
 */
import { isWebShopEnv, listPresets } from "@ragen/envs";
import { LocalModelPolicy } from "@ragen/rollout";
import type { WebGpuBackend } from "@ragen/tensor-webgpu";
import { AGENT_CHECKPOINTS, type AgentCheckpoint } from "../checkpoints.js";
import { h, svgNode } from "../dom.js";
import { AgentEpisode, type AgentTurn, type EpisodeEnd } from "./agent-episode.js";
import { type LoadedCheckpoint, loadCheckpoint } from "./load-checkpoint.js";
import { hasWebGpu, missingWebGpuMessage, pageBackend } from "./webgpu.js";

interface LoadedAgent {
  checkpoint: AgentCheckpoint;
  loaded: LoadedCheckpoint;
  policy: LocalModelPolicy;
}

function episodeEndText(end: EpisodeEnd, success: boolean): string {
  if (end === "done") return success ? "solved" : "the env ended it without success";
  return end === "budget" ? "the action budget is spent" : "the turns are used up";
}

type PanelState = "idle" | "loading" | "running" | "done" | "error" | "unavailable";

export class AgentPanel {
  private preset = "";
  private seed = 0;
  private episode: AgentEpisode | undefined;
  private stopRequested = false;
  /** Runs one after another: a reset during a turn must not let two generations share the policy. */
  private running: Promise<void> = Promise.resolve();
  private readonly agents = new Map<string, Promise<LoadedAgent>>();
  private readonly caption = h("p", { id: "agent-checkpoint", class: "muted description" });
  private readonly status = h("p", { id: "agent-status", class: "agent-status", "aria-live": "polite" });
  private readonly device = h("p", { id: "agent-device", class: "muted small" });
  private readonly summary = h("p", { id: "agent-summary", class: "agent-summary" });
  private readonly turns = h("ol", { id: "agent-turns", class: "turns" });
  private readonly temperature = h("input", {
    id: "agent-temperature",
    type: "number",
    min: "0",
    max: "2",
    step: "0.1",
    value: "0.5",
  });
  private readonly playButton = h(
    "button",
    {
      type: "button",
      id: "agent-play",
      class: "primary",
      onclick: () => void this.run(Number.POSITIVE_INFINITY),
    },
    "Watch the agent play",
  );
  private readonly stepButton = h(
    "button",
    { type: "button", id: "agent-step", onclick: () => void this.run(1) },
    "One turn",
  );
  private readonly stopButton = h(
    "button",
    { type: "button", id: "agent-stop", disabled: true, onclick: () => this.requestStop() },
    "Stop",
  );

  constructor(private readonly root: HTMLElement) {
    root.append(
      h("h2", {}, "Watch the agent play"),
      this.caption,
      h(
        "div",
        { class: "row agent-controls" },
        this.playButton,
        this.stepButton,
        this.stopButton,
        h("label", { class: "small" }, "temperature ", this.temperature),
      ),
      this.status,
      this.device,
      this.summary,
      this.turns,
    );
    if (!hasWebGpu()) {
      this.setState("unavailable", missingWebGpuMessage());
    }
  }

  /** The person picked a preset or a seed: the next episode starts there. */
  reset(preset: string, seed: number): void {
    this.stopRequested = true;
    this.preset = preset;
    this.seed = seed;
    this.episode = undefined;
    this.turns.replaceChildren();
    this.summary.textContent = "";
    const checkpoint = this.checkpointFor(preset);
    this.caption.textContent = checkpoint
      ? `A tiny Qwen2 checkpoint (examples/${checkpoint.example}, trained on ${checkpoint.trainedOn}` +
        `${checkpoint.trainedOn === preset ? "" : `; this is ${preset}`}) plays the same start state: ` +
        `${checkpoint.maxTurns} turns, ${checkpoint.maxNewTokens} tokens per response, RAGEN's prompt format. ` +
        checkpoint.note
      : `No checkpoint was trained on ${preset}.`;
    if (this.root.dataset.state !== "unavailable") {
      this.setState("idle", checkpoint ? "" : "Pick FrozenLake, Sokoban or WebShop to watch an agent.");
    }
    this.updateButtons();
  }

  private checkpointFor(preset: string): AgentCheckpoint | undefined {
    const env = listPresets()[preset]?.env;
    return env === undefined ? undefined : AGENT_CHECKPOINTS[env];
  }

  private requestStop(): void {
    this.stopRequested = true;
    this.stopButton.disabled = true;
  }

  private setState(state: PanelState, message: string): void {
    this.root.dataset.state = state;
    this.status.textContent = message;
    this.status.className = `agent-status ${state === "error" || state === "unavailable" ? "error" : ""}`;
    this.updateButtons();
  }

  private updateButtons(): void {
    const state = this.root.dataset.state as PanelState | undefined;
    const busy = state === "loading" || state === "running";
    const blocked = state === "unavailable" || this.checkpointFor(this.preset) === undefined;
    this.playButton.disabled = busy || blocked;
    this.stepButton.disabled = busy || blocked;
    this.stopButton.disabled = !busy || this.stopRequested;
  }

  /** Loads (once per checkpoint) the model, its tokenizer and the policy on the page's device. */
  private agentFor(checkpoint: AgentCheckpoint): Promise<LoadedAgent> {
    let agent = this.agents.get(checkpoint.folder);
    if (!agent) {
      agent = (async () => {
        const backend: WebGpuBackend = await pageBackend();
        const adapter = backend.ctx.info.adapter;
        this.device.textContent =
          `WebGPU adapter: ${[adapter.vendor, adapter.architecture, adapter.description].filter(Boolean).join(" ") || "unnamed"}` +
          `${adapter.isSoftware ? " (software: slow but the same kernels)" : ""}`;
        const loaded = await loadCheckpoint(
          new URL(`models/${checkpoint.folder}/`, document.baseURI),
          backend,
        );
        return { checkpoint, loaded, policy: new LocalModelPolicy(loaded.model, loaded.tokenizer) };
      })();
      this.agents.set(checkpoint.folder, agent);
      agent.catch(() => this.agents.delete(checkpoint.folder));
    }
    return agent;
  }

  /** Plays up to `maxTurns` turns of the current episode (a new one when none is going on). */
  private run(maxTurns: number): Promise<void> {
    this.running = this.running.then(() => this.play(maxTurns));
    return this.running;
  }

  private async play(maxTurns: number): Promise<void> {
    const checkpoint = this.checkpointFor(this.preset);
    if (!checkpoint) return;
    const preset = this.preset;
    const seed = this.seed;
    this.stopRequested = false;
    try {
      this.setState("loading", `Loading the ${checkpoint.trainedOn} checkpoint…`);
      const agent = await this.agentFor(checkpoint);
      if (this.preset !== preset || this.seed !== seed) return; // the person reset meanwhile
      const c = agent.loaded.config;
      if (this.episode === undefined || this.episode.end !== undefined) {
        this.episode = new AgentEpisode(preset, seed, agent.loaded.tokenizer, {
          maxTurns: checkpoint.maxTurns,
          maxActionsPerTurn: checkpoint.maxActionsPerTurn,
          maxNewTokens: checkpoint.maxNewTokens,
          temperature: this.readTemperature(),
          samplingSeed: seed,
        });
        this.turns.replaceChildren(this.startCard(this.episode));
      }
      const episode = this.episode;
      for (let played = 0; played < maxTurns && episode.end === undefined && !this.stopRequested; played++) {
        const writing = `Turn ${episode.turns.length + 1}: the model (${c.numHiddenLayers} layers, hidden ${c.hiddenSize}) is writing…`;
        this.setState("running", writing);
        const started = performance.now();
        const ticker = setInterval(() => {
          // After a reset the panel shows the new start; this turn finishes unseen.
          if (this.episode === episode)
            this.status.textContent = `${writing} ${Math.round((performance.now() - started) / 1000)} s`;
        }, 1000);
        const turn = await episode.playTurn(agent.policy).finally(() => clearInterval(ticker));
        if (this.episode !== episode) return; // reset while generating: drop the stale turn
        this.turns.append(this.turnCard(turn, episode));
        this.showSummary(episode);
      }
      const end = episode.end;
      this.setState(
        end === undefined ? "idle" : "done",
        end === undefined
          ? `Paused after turn ${episode.turns.length}: “One turn” or “Watch the agent play” goes on.`
          : `Episode over: ${episodeEndText(end, episode.success)}.`,
      );
    } catch (error) {
      console.error(error);
      const e = error as Error;
      this.setState(e.name === "WebGpuUnavailableError" ? "unavailable" : "error", `${e.name}: ${e.message}`);
    }
  }

  private readTemperature(): number {
    const value = Number(this.temperature.value);
    return Number.isFinite(value) && value >= 0 ? value : 0.5;
  }

  private showSummary(episode: AgentEpisode): void {
    const total = Math.round(episode.totalReward * 100) / 100;
    this.summary.textContent =
      `reward ${total} · actions ${episode.actionsUsed} / ${episode.actionBudget} · ` +
      `done ${episode.end === undefined ? "no" : "yes"} · success ${episode.success ? "yes" : "no"}`;
    this.summary.className = `agent-summary ${episode.success ? "success" : ""}`;
  }

  private stateView(episode: AgentEpisode, svg: string, text: string): HTMLElement {
    // WebShop's page is text: show it as text rather than as a picture of text.
    return isWebShopEnv(episode.env)
      ? h("pre", { class: "state-text shop-state" }, text)
      : svgNode(svg, "the state after this turn");
  }

  private startCard(episode: AgentEpisode): HTMLElement {
    return h(
      "li",
      { class: "turn start" },
      h("div", { class: "turn-head" }, `Start · ${episode.preset}, seed ${episode.seed}`),
      this.stateView(episode, episode.env.renderSvg(), episode.env.render()),
    );
  }

  private turnCard(turn: AgentTurn, episode: AgentEpisode): HTMLElement {
    const reward = Math.round(turn.reward * 100) / 100;
    return h(
      "li",
      { class: "turn", "data-turn": String(turn.turn) },
      h(
        "div",
        { class: "turn-head" },
        `Turn ${turn.turn}`,
        h(
          "span",
          { class: "muted small" },
          ` · ${turn.responseTokens} tokens in ${turn.seconds.toFixed(1)} s · reward ${reward > 0 ? "+" : ""}${reward}` +
            `${turn.formatPenalized ? " (format penalty)" : ""}`,
        ),
      ),
      h(
        "div",
        { class: "turn-body" },
        h(
          "div",
          { class: "turn-text" },
          h("div", { class: "label" }, "<think>"),
          h("p", { class: "think" }, turn.think || "(no <think> block: the response broke the format)"),
          h("div", { class: "label" }, "action"),
          h(
            "p",
            { class: "action" },
            turn.executed.length > 0 ? turn.executed.join(" || ") : `none (answer: “${turn.answer}”)`,
          ),
          h(
            "details",
            {},
            h("summary", {}, "response and state as text"),
            h("div", { class: "label" }, "response"),
            h("pre", { class: "raw" }, turn.response),
            h("div", { class: "label" }, "state after the turn"),
            h("pre", { class: "raw state-after" }, turn.stateText),
          ),
        ),
        this.stateView(episode, turn.stateSvg, turn.stateText),
      ),
    );
  }
}
