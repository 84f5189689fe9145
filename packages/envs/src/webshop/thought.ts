/** WebShop's warm-start thoughts: what the guide's action is for (guide.ts); a plain try for a random one. */
import type { Env } from "../types.js";

const NAVIGATION_BUTTONS = new Set([
  "next >",
  "< prev",
  "back to search",
  "description",
  "features",
  "reviews",
]);

/** The thought for a turn's action (one a turn); it reads the action alone, not the page. */
export function webShopThought(_env: Env, actions: readonly string[], fromGuide: boolean): string {
  const action = actions[0] ?? "";
  if (!fromGuide) return `I try ${action}.`;
  const argument = /^\w+\[(.*)\]$/.exec(action)?.[1] ?? "";
  if (action.startsWith("search[")) return "I search for the product the instruction describes.";
  if (argument === "buy now") return "Every option the instruction names is selected, so I buy it.";
  if (/^b0[a-z0-9]{8}$/.test(argument)) return "The first result matches my search best, so I open it.";
  if (NAVIGATION_BUTTONS.has(argument)) return `The product is not here yet, so I click ${argument}.`;
  return `The instruction asks for ${argument}, so I select it.`;
}
