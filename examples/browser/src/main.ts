/**
 * The page: pick an env preset and a seed, play it yourself, and watch a trained checkpoint play the
 * same start state on the browser's WebGPU.
 */
import { listPresets } from "@ragen/envs";
import { AgentPanel } from "./agent/agent-panel.js";
import { h } from "./dom.js";
import { PlayPanel } from "./play/play-panel.js";
import "./styles.css";

/** The envs on the page, in picker order, with their display names. */
const ENVS: readonly [string, string][] = [
  ["frozenlake", "FrozenLake"],
  ["sokoban", "Sokoban"],
  ["webshop", "WebShop-lite"],
];
const DEFAULT_PRESET = "FrozenLake";
const DEFAULT_SEED = 42;

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
}

function fillPresetPicker(select: HTMLSelectElement): void {
  const presets = Object.entries(listPresets());
  for (const [env, label] of ENVS) {
    const group = h("optgroup", { label });
    for (const [tag, preset] of presets) {
      if (preset.env === env) group.append(h("option", { value: tag, title: preset.description }, tag));
    }
    select.append(group);
  }
}

function main(): void {
  const picker = element<HTMLSelectElement>("preset");
  const seedInput = element<HTMLInputElement>("seed");
  fillPresetPicker(picker);
  const params = new URLSearchParams(location.search);
  const requested = params.get("env");
  picker.value = requested !== null && requested in listPresets() ? requested : DEFAULT_PRESET;
  const requestedSeed = Number(params.get("seed"));
  seedInput.value = String(
    params.has("seed") && Number.isInteger(requestedSeed) ? requestedSeed : DEFAULT_SEED,
  );

  const play = new PlayPanel(element("play"));
  const agent = new AgentPanel(element("agent"));
  const reset = () => {
    const seed = Math.trunc(Number(seedInput.value));
    const safeSeed = Number.isFinite(seed) && seed >= 0 ? seed : DEFAULT_SEED;
    seedInput.value = String(safeSeed);
    play.reset(picker.value, safeSeed);
    agent.reset(picker.value, safeSeed);
    // The current choice in the address bar, so a start state can be shared.
    history.replaceState(null, "", `?env=${encodeURIComponent(picker.value)}&seed=${safeSeed}`);
  };
  picker.addEventListener("change", () => {
    reset();
    picker.blur(); // arrow keys play instead of changing the env
  });
  element("reset").addEventListener("click", reset);
  element("new-seed").addEventListener("click", () => {
    seedInput.value = String(Math.floor(Math.random() * 100_000));
    reset();
  });
  seedInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter") reset();
  });
  reset();
  document.body.dataset.ready = "true";
}

main();
