/**
 * Goals the WebShop way (its synthetic goals): for every product and every combination of its
 * options (option names sorted, as itertools.product enumerates them), one goal that asks for the
 * product's instruction attributes, that option combination and the product's price cap. The goals
 * are shuffled once with a seed and split like the original: test = the first 500, val = the next
 * 1000, train = the rest. A catalog with fewer than 3000 goals keeps the same 1 : 2 : rest proportions
 * (test = floor(n / 6), val = floor(n / 3)). Goals are materialised on demand, so a 20,000-product
 * catalog costs one permutation array, not 200,000 objects.
 */
import { Rng } from "../rng.js";
import type { WebShopProduct } from "./product.js";

export type WebShopSplit = "train" | "val" | "test";
export const WEBSHOP_SPLITS: readonly WebShopSplit[] = ["train", "val", "test"];

export interface WebShopGoal {
  split: WebShopSplit;
  /** Position in its split. */
  index: number;
  /** The product the goal was made from. */
  asin: string;
  instructionText: string;
  /** Lowercase attribute phrases the buyer asked for. */
  attributes: string[];
  /** Option name -> wanted value. */
  goalOptions: Record<string, string>;
  /** Price cap in dollars (1e6 = none). */
  priceUpper: number;
  query: string;
  category: string;
  product_category: string;
  /** The goal product's title. */
  name: string;
  titleNouns: string[];
}

export interface WebShopGoalSet {
  /** Goals in all splits. */
  readonly total: number;
  size(split: WebShopSplit): number;
  /** The goal at `index` (0 <= index < size(split)) of a split. */
  goal(split: WebShopSplit, index: number): WebShopGoal;
}

/** The instruction for a product, an option combination and a price cap. */
export function webShopInstructionText(
  product: WebShopProduct,
  goalOptions: Record<string, string>,
  priceUpper: number,
): string {
  const byKind = (kind: string) =>
    product.instructionAttributes.filter((a) => product.attributeKinds[a] === kind);
  const props = byKind("prop");
  const items = byKind("item");
  const uses = byKind("use");
  let text = "Find me ";
  if (props.length > 0) text += `${props.join(", ")} `;
  text += product.noun;
  if (product.audience) text += ` ${product.audience}`;
  if (items.length > 0) text += ` with ${items.join(" and ")}`;
  if (uses.length > 0) text += ` for ${uses.join(" and ")}`;
  const optionText = Object.entries(goalOptions)
    .map(([name, value]) => `${name}: ${value}`)
    .join(", and ");
  if (optionText) text += ` with ${optionText}`;
  if (priceUpper < 1_000_000) text += `, and price lower than ${priceUpper.toFixed(2)} dollars`;
  return text;
}

function combinationCount(product: WebShopProduct): number {
  return Object.values(product.options).reduce((n, values) => n * values.length, 1);
}

/** Option combination number `k` of a product (last sorted name varies fastest). */
function combination(product: WebShopProduct, k: number): Record<string, string> {
  const names = Object.keys(product.options).sort();
  const chosen: string[] = [];
  let rest = k;
  for (let i = names.length - 1; i >= 0; i--) {
    const values = product.options[names[i]!]!;
    chosen[i] = values[rest % values.length]!;
    rest = Math.floor(rest / values.length);
  }
  return Object.fromEntries(names.map((name, i) => [name, chosen[i]!]));
}

/** How many goals each split gets out of `total`. */
export function webShopSplitSizes(total: number): Record<WebShopSplit, number> {
  const test = total >= 3000 ? 500 : Math.floor(total / 6);
  const val = total >= 3000 ? 1000 : Math.floor(total / 3);
  return { test, val, train: total - test - val };
}

export function buildWebShopGoals(products: readonly WebShopProduct[], catalogSeed: number): WebShopGoalSet {
  // starts[p] = number of goals of products before p.
  const starts = new Float64Array(products.length + 1);
  products.forEach((product, p) => {
    starts[p + 1] = starts[p]! + combinationCount(product);
  });
  const total = starts[products.length]!;
  // One fixed shuffle of all goals (the original shuffles with random.seed(233)).
  const order = new Uint32Array(total);
  for (let i = 0; i < total; i++) order[i] = i;
  const rng = new Rng(catalogSeed, "webshop-goal-order");
  for (let i = total - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const tmp = order[i]!;
    order[i] = order[j]!;
    order[j] = tmp;
  }
  const sizes = webShopSplitSizes(total);
  const offsets: Record<WebShopSplit, number> = { test: 0, val: sizes.test, train: sizes.test + sizes.val };

  const productOf = (raw: number): number => {
    let lo = 0;
    let hi = products.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= raw) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };

  return {
    total,
    size: (split) => sizes[split],
    goal(split, index) {
      if (!Number.isInteger(index) || index < 0 || index >= sizes[split]) {
        throw new RangeError(`goal index ${index} is outside the ${split} split (size ${sizes[split]})`);
      }
      const raw = order[offsets[split] + index]!;
      const p = productOf(raw);
      const product = products[p]!;
      const goalOptions = combination(product, raw - starts[p]!);
      return {
        split,
        index,
        asin: product.asin,
        instructionText: webShopInstructionText(product, goalOptions, product.priceUpper),
        attributes: product.instructionAttributes.slice(),
        goalOptions,
        priceUpper: product.priceUpper,
        query: product.query,
        category: product.category,
        product_category: product.product_category,
        name: product.Title,
        titleNouns: product.titleNouns.slice(),
      };
    },
  };
}
