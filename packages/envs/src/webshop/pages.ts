/**
 * The shop's pages as the text agent sees them (the original's "simple" text mode): the visible
 * text nodes joined by " [SEP] ", and the clickables each page offers.
 *
 *   search   WebShop [SEP] Instruction: [SEP] <instruction> [SEP] Search
 *   results  Instruction: [SEP] <instruction> [SEP] Back to Search [SEP] Page k (Total results: n)
 *            [SEP] < Prev (k > 1) [SEP] Next > [SEP] <ASIN> [SEP] <Title> [SEP] <Price> ...
 *   item     Instruction: [SEP] <instruction> [SEP] Back to Search [SEP] < Prev [SEP] <option name>
 *            [SEP] <value> ... [SEP] <Title> [SEP] Price: <Price> [SEP] Rating: N.A. [SEP] Description
 *            [SEP] Features [SEP] Reviews [SEP] Buy Now
 *   item-sub Instruction: [SEP] <instruction> [SEP] Back to Search [SEP] < Prev [SEP] <content>
 *   done     Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] <reward>
 *
 * The original's simple mode does not show which option values are selected; with
 * `showSelectedOptions` the item page adds "You have clicked <value>." after the option groups (the
 * wording of the original's rich text mode).
 */
import type { WebShopProduct } from "./catalog.js";

export type WebShopPageKind = "search" | "results" | "item" | "item-sub" | "done";
export type WebShopSubPage = "description" | "features" | "reviews";

export const WEBSHOP_SEP = " [SEP] ";
/** Products per results page (the original's PRODUCT_WINDOW). */
export const WEBSHOP_RESULTS_PER_PAGE = 10;

export const WEBSHOP_BUTTONS = {
  search: "search",
  backToSearch: "back to search",
  next: "next >",
  prev: "< prev",
  buyNow: "buy now",
  description: "description",
  features: "features",
  reviews: "reviews",
} as const;

/** Everything a page depends on. */
export interface WebShopPageState {
  kind: WebShopPageKind;
  instruction: string;
  /** The last search's keywords ("" before any search). */
  query: string;
  /** The last search's hits (asins, best first, at most 50). */
  hits: readonly string[];
  /** Results page number, from 1. */
  page: number;
  /** Results shown per page (default WEBSHOP_RESULTS_PER_PAGE, the original's 10). */
  resultsPerPage?: number;
  /** The product whose page (or sub-page) is open, else null. */
  asin: string | null;
  /** Selected option values by option name. */
  options: Readonly<Record<string, string>>;
  subPage: WebShopSubPage | null;
  /** The reward shown on the done page. */
  reward: number | null;
}

export interface WebShopPageOptions {
  showSelectedOptions: boolean;
}

type ProductLookup = (asin: string) => WebShopProduct | undefined;

/** The asins shown on the current results page. */
export function webShopPageHits(state: WebShopPageState): readonly string[] {
  const perPage = state.resultsPerPage ?? WEBSHOP_RESULTS_PER_PAGE;
  const start = (state.page - 1) * perPage;
  return state.hits.slice(start, start + perPage);
}

/** Python's str() of a float, for the score on the done page ("1.0", "0.5", "0.6666666666666666"). */
function formatScore(x: number): string {
  return Number.isInteger(x) ? x.toFixed(1) : String(x);
}

/** The visible text nodes of the current page. */
export function webShopPageNodes(
  state: WebShopPageState,
  lookup: ProductLookup,
  options: WebShopPageOptions,
): string[] {
  const header = ["Instruction:", state.instruction];
  switch (state.kind) {
    case "search":
      return ["WebShop", ...header, "Search"];
    case "results": {
      const nodes = [...header, "Back to Search", `Page ${state.page} (Total results: ${state.hits.length})`];
      if (state.page > 1) nodes.push("< Prev");
      nodes.push("Next >");
      for (const asin of webShopPageHits(state)) {
        const product = lookup(asin);
        if (product) nodes.push(product.asin, product.Title, product.Price);
      }
      return nodes;
    }
    case "item": {
      const product = state.asin ? lookup(state.asin) : undefined;
      if (!product) return [...header];
      const nodes = [...header, "Back to Search", "< Prev"];
      for (const [name, values] of Object.entries(product.options)) nodes.push(name, ...values);
      if (options.showSelectedOptions) {
        for (const [name, values] of Object.entries(product.options)) {
          const chosen = state.options[name];
          if (chosen !== undefined && values.includes(chosen)) nodes.push(`You have clicked ${chosen}.`);
        }
      }
      nodes.push(
        product.Title,
        `Price: ${product.Price}`,
        `Rating: ${product.Rating}`,
        "Description",
        "Features",
        "Reviews",
        "Buy Now",
      );
      return nodes;
    }
    case "item-sub": {
      const product = state.asin ? lookup(state.asin) : undefined;
      const nodes = [...header, "Back to Search", "< Prev"];
      if (!product) return nodes;
      if (state.subPage === "description") nodes.push(product.Description);
      else if (state.subPage === "features") {
        if (product.BulletPoints.length > 0) nodes.push(...product.BulletPoints);
        else nodes.push("No Features");
      } else nodes.push("No reviews found");
      return nodes;
    }
    case "done":
      return [
        "Thank you for shopping with us!",
        "Your score (min 0.0, max 1.0)",
        formatScore(state.reward ?? 0),
      ];
  }
}

export function webShopPageText(
  state: WebShopPageState,
  lookup: ProductLookup,
  options: WebShopPageOptions,
): string {
  return webShopPageNodes(state, lookup, options).join(WEBSHOP_SEP);
}

/** Whether the page has a search box. */
export function webShopHasSearchBox(state: WebShopPageState): boolean {
  return state.kind === "search";
}

/**
 * The page's clickables, lowercased, in the original's order: buttons, then product links, then
 * option values.
 */
export function webShopClickables(state: WebShopPageState, lookup: ProductLookup): string[] {
  const B = WEBSHOP_BUTTONS;
  switch (state.kind) {
    case "search":
      return [B.search];
    case "results": {
      const out: string[] = [B.backToSearch];
      if (state.page > 1) out.push(B.prev);
      out.push(B.next);
      for (const asin of webShopPageHits(state))
        if (!out.includes(asin.toLowerCase())) out.push(asin.toLowerCase());
      return out;
    }
    case "item": {
      const out: string[] = [B.backToSearch, B.prev, B.description, B.features, B.reviews, B.buyNow];
      const product = state.asin ? lookup(state.asin) : undefined;
      if (product) {
        for (const values of Object.values(product.options)) {
          for (const value of values) if (!out.includes(value)) out.push(value);
        }
      }
      return out;
    }
    case "item-sub":
      return [B.backToSearch, B.prev];
    case "done":
      return [];
  }
}

/**
 * The action list an agent is offered (RAGEN's get_available_actions): "search[<content>]" when the
 * page has a search box, then click[x] for every clickable except "search". Like RAGEN, an empty
 * results page past the end offers no "next >".
 */
export function webShopAvailableActions(state: WebShopPageState, lookup: ProductLookup): string[] {
  const actions: string[] = [];
  if (webShopHasSearchBox(state)) actions.push("search[<content>]");
  for (const clickable of webShopClickables(state, lookup)) {
    if (clickable !== WEBSHOP_BUTTONS.search) actions.push(`click[${clickable}]`);
  }
  if (state.kind === "results" && state.page > 1 && webShopPageHits(state).length === 0) {
    return actions.filter((a) => a !== `click[${WEBSHOP_BUTTONS.next}]`);
  }
  return actions;
}
