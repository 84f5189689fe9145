/**
 * "You play": the board (the env's SVG render, or the WebShop page), arrow keys and buttons on grid
 * envs, the oracle's hint, and reward / done / success after every move.
 */
import { isWebShopEnv, listPresets } from "@ragen/envs";
import { h, svgNode } from "../dom.js";
import { HumanGame } from "./human-game.js";
import { webShopView } from "./webshop-view.js";

const ARROW_KEYS: Readonly<Record<string, string>> = {
  ArrowUp: "Up",
  ArrowDown: "Down",
  ArrowLeft: "Left",
  ArrowRight: "Right",
};

function formatReward(value: number): string {
  const rounded = Math.round(value * 100) / 100;
  return `${rounded > 0 ? "+" : ""}${rounded}`;
}

export class PlayPanel {
  private game: HumanGame | undefined;
  private hinted: string | undefined;
  private readonly board = h("div", { id: "board", class: "board" });
  private readonly pad = h("div", { id: "pad", class: "pad" });
  private readonly hintText = h("span", { id: "hint-text", class: "hint-text" });
  private readonly stateText = h("pre", { id: "state-text", class: "state-text" });
  private readonly moves = h("ol", { id: "moves", class: "moves" });
  private readonly message = h("p", { id: "play-message", class: "message", "aria-live": "polite" });
  private readonly description = h("p", { class: "muted description" });
  private readonly stat = {
    reward: h("dd", { id: "status-reward" }),
    total: h("dd", { id: "status-total" }),
    actions: h("dd", { id: "status-actions" }),
    done: h("dd", { id: "status-done" }),
    success: h("dd", { id: "status-success" }),
  };

  constructor(private readonly root: HTMLElement) {
    const statRow = (label: string, value: HTMLElement) => h("div", {}, h("dt", {}, label), value);
    root.append(
      h("h2", {}, "You play"),
      this.description,
      h(
        "dl",
        { class: "status" },
        statRow("reward", this.stat.reward),
        statRow("total", this.stat.total),
        statRow("actions", this.stat.actions),
        statRow("done", this.stat.done),
        statRow("success", this.stat.success),
      ),
      this.board,
      this.message,
      h(
        "div",
        { class: "row" },
        this.pad,
        h(
          "div",
          { class: "hint" },
          h("button", { type: "button", id: "hint", onclick: () => this.showHint() }, "Ask the oracle"),
          this.hintText,
        ),
      ),
      h("details", {}, h("summary", {}, "The state as the agent reads it"), this.stateText),
      h("h3", {}, "Moves"),
      this.moves,
    );
    document.addEventListener("keydown", (event) => this.onKey(event));
  }

  /** Starts a new episode of `preset` from `seed`. */
  reset(preset: string, seed: number): void {
    this.game = new HumanGame(preset, seed);
    this.hinted = undefined;
    this.hintText.textContent = "";
    this.moves.replaceChildren();
    this.description.textContent = listPresets()[preset]?.description ?? preset;
    const actions = this.game.env.actions ?? [];
    const arrow = (action: string, glyph: string) =>
      h(
        "button",
        {
          type: "button",
          class: "arrow",
          "data-action": action,
          title: action,
          onclick: () => this.act(action),
        },
        glyph,
      );
    this.pad.replaceChildren();
    if (["Up", "Down", "Left", "Right"].every((a) => actions.includes(a))) {
      this.pad.append(
        h("span", {}),
        arrow("Up", "↑"),
        h("span", {}),
        arrow("Left", "←"),
        arrow("Down", "↓"),
        arrow("Right", "→"),
      );
      this.pad.title = "or use the arrow keys";
    }
    this.render();
  }

  act(action: string): void {
    if (!this.game || this.game.over) return;
    const result = this.game.act(action);
    if (!result) return;
    this.hinted = undefined;
    this.hintText.textContent = "";
    const move = this.game.moves.at(-1)!;
    this.moves.append(
      h(
        "li",
        { class: move.valid ? "" : "invalid" },
        `${action} → ${formatReward(move.reward)}${move.valid ? "" : " (invalid)"}${move.valid && !move.effective ? " (no change)" : ""}`,
      ),
    );
    this.render();
  }

  private showHint(): void {
    const hint = this.game?.hint();
    this.hinted = hint;
    this.hintText.textContent =
      hint === undefined ? "The episode is over." : `The oracle would play: ${hint}`;
    this.render();
  }

  private onKey(event: KeyboardEvent): void {
    const target = event.target as HTMLElement | null;
    if (target && ["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName)) return;
    const action = ARROW_KEYS[event.key];
    if (!action || !this.game?.env.actions?.includes(action)) return;
    event.preventDefault(); // no page scrolling while playing
    this.act(action);
  }

  private render(): void {
    const game = this.game;
    if (!game) return;
    const env = game.env;
    if (isWebShopEnv(env)) this.board.replaceChildren(webShopView(env, (a) => this.act(a), this.hinted));
    else this.board.replaceChildren(svgNode(env.renderSvg(), "the current state"));
    for (const button of this.pad.querySelectorAll<HTMLButtonElement>("button")) {
      button.disabled = game.over;
      button.classList.toggle("hinted", button.dataset.action === this.hinted);
    }
    this.stateText.textContent = env.render();
    this.stat.reward.textContent = game.last ? formatReward(game.last.reward) : "–";
    this.stat.total.textContent = formatReward(game.totalReward);
    this.stat.actions.textContent = `${game.actionsUsed} / ${game.actionBudget}`;
    this.stat.done.textContent = game.over ? "yes" : "no";
    this.stat.success.textContent = game.success ? "yes" : "no";
    this.root.dataset.over = String(game.over);
    this.message.textContent = !game.over
      ? ""
      : game.success
        ? `Solved in ${game.actionsUsed} actions! Reset or pick a new seed to play again.`
        : `Episode over: ${game.overReason}. Reset to try again.`;
    this.message.className = `message ${game.success ? "success" : game.over ? "failure" : ""}`;
  }
}
