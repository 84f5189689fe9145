import { validateConfig } from "../config.js";
import { textPanelSvg } from "../svg.js";
import type { Env, StepInfo, StepResult } from "../types.js";
import {
  checkSokobanConfig,
  SOKOBAN_CELL_KINDS,
  SOKOBAN_CELL_NAMES,
  SOKOBAN_SCHEMA,
  type SokobanConfig,
  type SokobanSymbols,
} from "./config.js";
import { generateSokobanRoom } from "./generate.js";
import { renderSokobanObservation, sokobanRoomSvg } from "./render.js";
import { isSokobanSolved, parseSokobanRoom, type SokobanRoom, sokobanBoxesOnTarget } from "./room.js";
import { applySokobanMove, parseSokobanAction, SOKOBAN_ACTIONS } from "./rules.js";

/** gym-sokoban's rewards. */
export const SOKOBAN_REWARDS = Object.freeze({
  step: -0.1,
  boxOnTarget: 1,
  boxOffTarget: -1,
  solved: 10,
});

export interface SokobanStepInfo extends StepInfo {
  /** Boxes standing on targets after the step. */
  boxesOnTarget: number;
  /** The step pushed a box. */
  boxPushed: boolean;
}

/** A config as users write it: every field optional, symbols too. */
export type SokobanConfigInput = Partial<Omit<SokobanConfig, "symbols">> & {
  symbols?: Partial<SokobanSymbols>;
};

function describeRules(config: SokobanConfig): string {
  const legend = SOKOBAN_CELL_KINDS.map(
    (kind) => `${config.symbols[kind]} = ${SOKOBAN_CELL_NAMES[kind]}`,
  ).join(", ");
  const r = SOKOBAN_REWARDS;
  const lines = [
    "You are playing Sokoban. You are the player in a room of walls and floor; push every box onto a target.",
    "Moving into a box pushes it one cell in the same direction, but only when the cell behind it is empty floor or an empty target.",
    "Boxes cannot be pulled, and cannot be pushed into a wall or another box, so a box in a corner is stuck for good.",
  ];
  // The legend explains the grid, so a coordinates-only observation leaves it out (as FrozenLake's does).
  if (config.observationFormat !== "coord") lines.push(`Symbols: ${legend}.`);
  if (config.observationFormat !== "grid") {
    lines.push(
      "Coordinates are (row, col), zero-indexed from the top-left corner; row grows downwards and col to the right.",
    );
  }
  lines.push(
    `Actions: ${SOKOBAN_ACTIONS.join(", ")} (one action name per step).`,
    `Rewards: ${r.step} per step, +${r.boxOnTarget} for pushing a box onto a target, ${r.boxOffTarget} for pushing one off, ` +
      `+${r.solved} when every box is on a target. The episode ends when all boxes are on targets or after ${config.maxSteps} steps.`,
  );
  return lines.join("\n");
}

/**
 * Sokoban as a text env (RAGEN's SokobanEnv on gym-sokoban's rules and room generator). The
 * observation is the room, one character per cell, rows joined by "\n"; with RAGEN-2's
 * `observationFormat` "coord" a coordinate description instead, "grid_coord" both.
 */
export class SokobanEnv implements Env<SokobanConfig, SokobanStepInfo> {
  readonly name = "sokoban";
  readonly config: Readonly<SokobanConfig>;
  readonly actions = SOKOBAN_ACTIONS;
  readonly instructions: string;
  private current: SokobanRoom | null = null;
  private stepCount = 0;
  private finished = true;

  /** `config` is validated here (throwing EnvConfigError); missing fields take RAGEN's defaults. */
  constructor(config: SokobanConfigInput = {}) {
    const valid = validateConfig<SokobanConfig>("sokoban", SOKOBAN_SCHEMA, config);
    checkSokobanConfig(valid);
    this.config = Object.freeze({
      ...valid,
      dimRoom: Object.freeze([...valid.dimRoom]) as unknown as [number, number],
      symbols: Object.freeze({ ...valid.symbols }),
    });
    this.instructions = describeRules(this.config);
  }

  /**
   * An env playing the room drawn in `text` (with `config.symbols`, RAGEN's by default); see
   * parseSokobanRoom. The config still describes the rooms that `reset(seed)` generates.
   */
  static fromText(text: string, config: SokobanConfigInput = {}): SokobanEnv {
    const env = new SokobanEnv(config);
    env.loadRoom(parseSokobanRoom(text, env.config.symbols));
    return env;
  }

  get done(): boolean {
    return this.finished;
  }

  /** The current room, or null before the first reset. */
  get room(): SokobanRoom | null {
    return this.current;
  }

  /** Valid actions taken in this episode. */
  get steps(): number {
    return this.stepCount;
  }

  reset(seed: number): string {
    const { dimRoom, numBoxes, searchDepth } = this.config;
    return this.loadRoom(generateSokobanRoom(seed, { dimRoom, numBoxes, searchDepth }));
  }

  /** Start a new episode in `room` (a generated, parsed or hand-built one); returns the observation. */
  loadRoom(room: SokobanRoom): string {
    this.current = room;
    this.stepCount = 0;
    this.finished = isSokobanSolved(room);
    return this.render();
  }

  step(action: string): StepResult<SokobanStepInfo> {
    const room = this.current;
    if (!room || this.finished) return this.invalid();
    const move = typeof action === "string" ? parseSokobanAction(action) : null;
    if (!move) return this.invalid();

    const before = sokobanBoxesOnTarget(room);
    const { room: after, moved, pushed } = applySokobanMove(room, move);
    const onTarget = sokobanBoxesOnTarget(after);
    const success = onTarget === after.boxes.length;
    let reward = SOKOBAN_REWARDS.step;
    if (onTarget > before) reward += SOKOBAN_REWARDS.boxOnTarget;
    else if (onTarget < before) reward += SOKOBAN_REWARDS.boxOffTarget;
    if (success) reward += SOKOBAN_REWARDS.solved;

    this.current = after;
    this.stepCount++;
    this.finished = success || this.stepCount >= this.config.maxSteps;
    return {
      observation: this.render(),
      reward,
      done: this.finished,
      info: {
        success,
        actionIsValid: true,
        actionIsEffective: moved,
        boxesOnTarget: onTarget,
        boxPushed: pushed,
      },
    };
  }

  /** An invalid action, or any action before reset or after the end: nothing changes. */
  private invalid(): StepResult<SokobanStepInfo> {
    const room = this.current;
    return {
      observation: this.render(),
      reward: 0,
      done: this.finished,
      info: {
        success: room ? isSokobanSolved(room) : false,
        actionIsValid: false,
        actionIsEffective: false,
        boxesOnTarget: room ? sokobanBoxesOnTarget(room) : 0,
        boxPushed: false,
      },
    };
  }

  render(): string {
    const room = this.current;
    return room ? renderSokobanObservation(room, this.config.symbols, this.config.observationFormat) : "";
  }

  renderSvg(): string {
    const room = this.current;
    if (!room) return textPanelSvg(["Sokoban: no room yet; call reset(seed)."], { title: "Sokoban" });
    const caption = `step ${this.stepCount}/${this.config.maxSteps}, boxes on target ${sokobanBoxesOnTarget(room)}/${room.boxes.length}`;
    return sokobanRoomSvg(room, caption);
  }

  availableActions(): string[] {
    return this.current && !this.finished ? [...SOKOBAN_ACTIONS] : [];
  }
}
