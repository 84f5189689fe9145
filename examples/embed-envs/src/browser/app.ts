// The browser page: pick a preset and a seed, see the env's SVG and text renders, and step it with
// buttons, the arrow keys, typed actions or the oracle. Everything comes from @ragen/envs alone.

import { createEnv, type Env, listPresets, oracleAction, Rng } from "@ragen/envs";

const ARROW_KEYS: Record<string, string> = {
  ArrowLeft: "left",
  ArrowRight: "right",
  ArrowUp: "up",
  ArrowDown: "down",
};

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page has no #${id}`);
  return found as T;
}

const presetSelect = element<HTMLSelectElement>("preset");
const seedInput = element<HTMLInputElement>("seed");
const board = element<HTMLImageElement>("board");
const text = element<HTMLPreElement>("text");
const status = element<HTMLParagraphElement>("status");
const actionButtons = element<HTMLDivElement>("actions");
const actionInput = element<HTMLInputElement>("action");
const instructions = element<HTMLPreElement>("instructions");
const log = element<HTMLOListElement>("log");

interface Episode {
  env: Env;
  seed: number;
  steps: number;
  totalReward: number;
  success: boolean;
  oracleRng: Rng;
}

let episode: Episode;

function render(): void {
  const { env } = episode;
  // An <img> shows the SVG without running anything inside it.
  board.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(env.renderSvg())}`;
  text.textContent = env.render();
  status.dataset.done = String(env.done);
  status.dataset.success = String(episode.success);
  status.dataset.steps = String(episode.steps);
  status.dataset.totalReward = String(episode.totalReward);
  status.textContent =
    `${env.name}, seed ${episode.seed}: ${episode.steps} steps, total reward ${episode.totalReward.toFixed(2)}` +
    (env.done ? (episode.success ? ", solved" : ", over") : "");
  // Free-form envs (Countdown, WebShop search) list templates or suggestions here, fixed-action envs their names.
  actionButtons.replaceChildren(
    ...env.availableActions().map((action) => {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = action;
      button.disabled = env.done;
      button.addEventListener("click", () => step(action));
      return button;
    }),
  );
}

function reset(): void {
  const preset = presetSelect.value;
  const seed = Math.max(0, Math.trunc(Number(seedInput.value) || 0));
  const env = createEnv(preset);
  env.reset(seed);
  episode = { env, seed, steps: 0, totalReward: 0, success: false, oracleRng: new Rng(seed, "oracle") };
  instructions.textContent = env.instructions;
  log.replaceChildren();
  render();
  // After a reset the arrow keys should move the player, not change the seed or the preset.
  if (document.activeElement === seedInput || document.activeElement === presetSelect)
    (document.activeElement as HTMLElement).blur();
}

function step(action: string): void {
  const { env } = episode;
  if (env.done) return;
  const { reward, info } = env.step(action);
  episode.steps++;
  episode.totalReward += reward;
  episode.success = info.success;
  const entry = document.createElement("li");
  entry.textContent = `${action} → reward ${reward}${info.actionIsValid ? "" : " (invalid: nothing happened)"}`;
  if (!info.actionIsValid) entry.className = "invalid";
  log.append(entry);
  render();
}

for (const [name, preset] of Object.entries(listPresets())) {
  const option = document.createElement("option");
  option.value = name;
  option.textContent = `${name} (${preset.env})`;
  presetSelect.append(option);
}

element<HTMLFormElement>("setup").addEventListener("submit", (event) => {
  event.preventDefault();
  reset();
});
presetSelect.addEventListener("change", reset);
element<HTMLButtonElement>("oracle").addEventListener("click", () => {
  if (!episode.env.done) step(oracleAction(episode.env, episode.oracleRng));
});
element<HTMLFormElement>("free").addEventListener("submit", (event) => {
  event.preventDefault();
  step(actionInput.value);
  actionInput.value = "";
});
document.addEventListener("keydown", (event) => {
  if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
  const wanted = ARROW_KEYS[event.key];
  const action = episode.env.actions?.find((name) => name.toLowerCase() === wanted);
  if (action === undefined) return;
  event.preventDefault();
  step(action);
});

reset();
