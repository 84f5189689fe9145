/**
 * Policies for WebShop-lite. The oracle knows the goal: it searches with the goal product's title,
 * pages to the best product among the hits (the goal product when it is there, else the one whose
 * best purchase scores highest), selects the options that match the goal and buys. The random
 * policy clicks uniformly among the available actions and, on the search page, types a few words of
 * the instruction.
 */
import type { Rng } from "../rng.js";
import type { WebShopProduct } from "./catalog.js";
import type { WebShopEnv } from "./env.js";
import type { WebShopGoal } from "./goals.js";
import { WEBSHOP_RESULTS_PER_PAGE } from "./pages.js";
import { webShopOptionMatches, webShopReward } from "./reward.js";
import { WEBSHOP_STOPWORDS, webShopWords } from "./text.js";

/** The query the oracle searches with. */
export function webShopOracleQuery(goal: WebShopGoal): string {
  return goal.name.toLowerCase();
}

/**
 * The option values to select on `product` for `goal`: per option group, the value that satisfies
 * the most goal options (none if no value satisfies any).
 */
export function webShopBestOptions(product: WebShopProduct, goal: WebShopGoal): Record<string, string> {
  const chosen: Record<string, string> = {};
  for (const [name, values] of Object.entries(product.options)) {
    let best: string | undefined;
    let bestMatches = 0;
    for (const value of values) {
      const matches = webShopOptionMatches(goal.goalOptions, { [name]: value });
      if (matches > bestMatches) {
        best = value;
        bestMatches = matches;
      }
    }
    if (best !== undefined) chosen[name] = best;
  }
  return chosen;
}

/** The best reward buying `product` can earn for `goal`. */
export function webShopBestReward(product: WebShopProduct, goal: WebShopGoal): number {
  return webShopReward(product, goal, product.purchasePrice, webShopBestOptions(product, goal)).reward;
}

const targets = new WeakMap<WebShopEnv, { key: string; asin: string | null }>();

/** The product among the last search's hits the oracle heads for (memoised per env, goal and query). */
function oracleTarget(env: WebShopEnv, goal: WebShopGoal): string | null {
  const page = env.page;
  const key = `${goal.split}:${goal.index}:${page.query}:${page.hits.length}`;
  const memo = targets.get(env);
  if (memo && memo.key === key) return memo.asin;
  let best: string | null = page.hits.includes(goal.asin) ? goal.asin : null;
  let bestReward = -1;
  for (const asin of best === null ? page.hits : []) {
    const product = env.catalog.byAsin.get(asin);
    if (!product) continue;
    const reward = webShopBestReward(product, goal);
    if (reward > bestReward) {
      best = asin;
      bestReward = reward;
    }
  }
  targets.set(env, { key, asin: best });
  return best;
}

/** The oracle's next action. */
export function webShopOracleAction(env: WebShopEnv, _rng?: Rng): string {
  const goal = env.goal;
  if (!goal || env.done) return "click[buy now]";
  const page = env.page;
  switch (page.kind) {
    case "search":
      return `search[${webShopOracleQuery(goal)}]`;
    case "results": {
      const target = oracleTarget(env, goal);
      if (target === null) return "click[back to search]";
      const perPage = page.resultsPerPage ?? WEBSHOP_RESULTS_PER_PAGE;
      const targetPage = Math.floor(page.hits.indexOf(target) / perPage) + 1;
      if (targetPage > page.page) return "click[next >]";
      if (targetPage < page.page) return "click[< prev]";
      return `click[${target.toLowerCase()}]`;
    }
    case "item": {
      const target = oracleTarget(env, goal);
      const product = page.asin ? env.catalog.byAsin.get(page.asin) : undefined;
      if (!product || page.asin !== target) return "click[< prev]";
      for (const [name, value] of Object.entries(webShopBestOptions(product, goal))) {
        if (page.options[name] !== value) return `click[${value}]`;
      }
      return "click[buy now]";
    }
    case "item-sub":
      return "click[< prev]";
    default:
      return "click[buy now]";
  }
}

const NOT_SEARCH_WORDS = new Set(["find", "me", "price", "lower", "than", "dollars"]);

/** A random action: uniform among the available ones; a search types 2-4 words of the instruction. */
export function webShopRandomAction(env: WebShopEnv, rng: Rng): string {
  const actions = env.availableActions();
  if (actions.length === 0) return "click[buy now]";
  const action = rng.choice(actions);
  if (action !== "search[<content>]") return action;
  const words = webShopWords(env.goal?.instructionText ?? "").filter(
    (w) => !WEBSHOP_STOPWORDS.has(w) && !NOT_SEARCH_WORDS.has(w) && !/^\d/.test(w),
  );
  if (words.length === 0) return "search[products]";
  const count = Math.min(words.length, rng.intRange(2, 5));
  const picked = rng
    .sample(
      words.map((_, i) => i),
      count,
    )
    .sort((a, b) => a - b);
  return `search[${picked.map((i) => words[i]).join(" ")}]`;
}
