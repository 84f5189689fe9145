/**
 * Where a WebShop episode went wrong. The episode is replayed from its seed and recorded actions (the env
 * is deterministic), so the audit sees what the env saw: the goal, every page, the product bought and
 * the reward's parts.
 */
import { createEnv, type WebShopEnv, type WebShopStepInfo } from "@ragen/envs";
import type { TrajectoryRecord } from "@ragen/logging";

/** In the order an episode can fail; the first that applies names it. */
export const FAILURE_CATEGORIES = [
  "success",
  "never searched",
  "never opened a product",
  "over budget",
  "wrong product",
  "wrong options",
  "partial match",
] as const;
export type FailureCategory = (typeof FAILURE_CATEGORIES)[number];

export const FAILURE_EXPLANATIONS: Record<FailureCategory, string> = {
  success: "bought the goal (reward 1)",
  // The first page accepts only a search, so an episode without one never had a valid action.
  "never searched": "no search ran: malformed answers, or clicks on buttons the search page does not have",
  "never opened a product": "searched, but never opened a product page",
  "over budget": "opened products, but the turns ran out before Buy Now",
  "wrong product": "bought a product other than the one the goal was made from",
  "wrong options": "bought the goal's product without the options the instruction asked for",
  "partial match": "bought the goal's product with its options, yet the reward fell short of 1",
};

export interface EpisodeAudit {
  envTag: string;
  seed: number;
  step: number;
  instruction: string;
  goalAsin: string;
  actions: string[];
  /** Actions the page accepted. */
  validActions: number;
  searches: string[];
  opened: string[];
  purchasedAsin: string | null;
  reward: number;
  success: boolean;
  category: FailureCategory;
  rewardBreakdown: WebShopStepInfo["rewardBreakdown"];
}

/** Replays `record` (a WebShop trajectory) and says where it failed. */
export function auditEpisode(record: TrajectoryRecord): EpisodeAudit {
  const env = createEnv(record.envTag) as WebShopEnv;
  env.reset(record.seed);
  const goal = env.goal!;
  const actions = record.turns.flatMap((turn) => turn.actions);
  const searches: string[] = [];
  const opened: string[] = [];
  let validActions = 0;
  let last: WebShopStepInfo | undefined;
  for (const action of actions) {
    if (env.done) break;
    const before = env.page.kind;
    const result = env.step(action);
    last = result.info;
    if (!result.info.actionIsValid) continue;
    validActions++;
    if (before === "search" && /^search\[/i.test(action)) searches.push(action.slice(7, -1));
    // The env's page says what was opened: a product page reached from the results.
    const page = env.page;
    if (before === "results" && page.kind === "item" && page.asin) opened.push(page.asin);
  }
  const breakdown = last?.rewardBreakdown ?? null;
  const purchasedAsin = last?.purchasedAsin ?? null;
  const reward = breakdown?.reward ?? 0;
  const audit = {
    envTag: record.envTag,
    seed: record.seed,
    step: record.step,
    instruction: goal.instructionText,
    goalAsin: goal.asin,
    actions,
    validActions,
    searches,
    opened,
    purchasedAsin,
    reward,
    success: reward === 1,
    rewardBreakdown: breakdown,
  };
  return { ...audit, category: categoryOf(audit) };
}

function categoryOf(a: Omit<EpisodeAudit, "category">): FailureCategory {
  if (a.success) return "success";
  if (a.searches.length === 0) return "never searched";
  if (a.opened.length === 0) return "never opened a product";
  if (a.purchasedAsin === null) return "over budget";
  if (a.purchasedAsin.toUpperCase() !== a.goalAsin.toUpperCase()) return "wrong product";
  const b = a.rewardBreakdown;
  if (b && b.numGoalOptions > 0 && b.numOptionMatches < b.numGoalOptions) return "wrong options";
  return "partial match";
}

/** Episodes per category, every category present (0 where none). */
export function countFailures(audits: readonly EpisodeAudit[]): Record<FailureCategory, number> {
  const counts = Object.fromEntries(FAILURE_CATEGORIES.map((c) => [c, 0])) as Record<FailureCategory, number>;
  for (const audit of audits) counts[audit.category]++;
  return counts;
}
