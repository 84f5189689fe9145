/**
 * SFT data on disk: JSONL, one chat per line — the chat's messages (role/content, as a chat template
 * renders them) and the turns the trainer tokenises exactly as a rollout would (instructions, then per
 * turn the observation, the actions left and the assistant's response).
 */
import { readFileSync } from "node:fs";
import { writeFileAtomic } from "@ragen/logging/node";
import type { SftConversation } from "../sft-data.js";

/** Writes the chats as JSONL, atomically (a crash leaves the old file or the whole new one). */
export function writeSftJsonl(path: string, chats: readonly SftConversation[]): void {
  writeFileAtomic(path, chats.map((chat) => `${JSON.stringify(chat)}\n`).join(""));
}

/** Reads SFT JSONL; throws naming the file and line of anything that is not a chat with turns. */
export function readSftJsonl(path: string): SftConversation[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    throw new Error(`${path}: ${missing ? "no such SFT data file" : (error as Error).message}`);
  }
  const chats: SftConversation[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    const where = `${path}:${index + 1}`;
    let chat: unknown;
    try {
      chat = JSON.parse(line);
    } catch {
      throw new Error(`${where}: not a JSON line`);
    }
    const problem = chatProblem(chat);
    if (problem) throw new Error(`${where}: ${problem}`);
    chats.push(chat as SftConversation);
  });
  if (chats.length === 0) throw new Error(`${path}: no chats in the file`);
  return chats;
}

function chatProblem(chat: unknown): string | undefined {
  if (chat === null || typeof chat !== "object") return "a line must be a chat object";
  const { instructions, turns } = chat as Record<string, unknown>;
  if (typeof instructions !== "string") return 'the chat has no "instructions" text';
  if (!Array.isArray(turns) || turns.length === 0) return 'the chat has no "turns"';
  for (const [i, turn] of turns.entries()) {
    const t = turn as Record<string, unknown> | null;
    if (!t || typeof t.observation !== "string" || typeof t.response !== "string")
      return `turn ${i + 1} needs an "observation" and a "response" text`;
    if (t.actionsLeft !== undefined && typeof t.actionsLeft !== "number")
      return `turn ${i + 1}: "actionsLeft" must be a number`;
  }
  return undefined;
}
