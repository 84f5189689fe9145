import type { StepInfo, StepResult } from "../types.js";
import { RemoteEnvError, requestUrl } from "./http.js";

/** Where a reply came from, for the errors about its content. */
export interface ReplySource {
  root: string;
  method: "GET" | "POST";
  path: string;
}

/** The error of a reply that parsed but lacks what the protocol needs. */
export function badReply(source: ReplySource, problem: string): RemoteEnvError {
  const url = requestUrl(source.root, { path: source.path });
  const endpoint = `${source.method} ${source.path}`;
  return new RemoteEnvError(`${endpoint} ${url}: ${problem}`, "bad-reply", url, endpoint, 200);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * A step's info as StepInfo, from the server's info object (camelCase as this project writes it, or
 * snake_case as RAGEN's Python envs do). Where the server says nothing:
 * - `success`: the episode ended with a positive reward (servers that pay 1 for a solved task);
 * - `actionIsValid`: true (the server took the action);
 * - `actionIsEffective`: the same as actionIsValid.
 * The server's other keys are kept as they are.
 */
export function toStepInfo(info: unknown, reward: number, done: boolean): StepInfo {
  const fields = isRecord(info) ? info : {};
  const flag = (camel: string, snake: string): boolean | undefined => {
    const value = fields[camel] ?? fields[snake];
    return typeof value === "boolean" ? value : undefined;
  };
  const actionIsValid = flag("actionIsValid", "action_is_valid") ?? true;
  return {
    ...fields,
    success: flag("success", "success") ?? (done && reward > 0),
    actionIsValid,
    actionIsEffective: flag("actionIsEffective", "action_is_effective") ?? actionIsValid,
  };
}

/** A reward field: a finite number, or null / absent for none (OpenEnv's reset sends null). */
export function readReward(source: ReplySource, value: unknown, field: string): number {
  if (value === null || value === undefined) return 0;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value !== "number" || !Number.isFinite(value))
    throw badReply(source, `"${field}" must be a number or null, got ${JSON.stringify(value)}`);
  return value;
}

/** A done field: a boolean, or absent for false. */
export function readDone(source: ReplySource, value: unknown, field: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== "boolean")
    throw badReply(source, `"${field}" must be a boolean, got ${JSON.stringify(value)}`);
  return value;
}

export function stepResult(
  observation: string,
  reward: number,
  done: boolean,
  info: unknown,
): StepResult<StepInfo> {
  return { observation, reward, done, info: toStepInfo(info, reward, done) };
}
