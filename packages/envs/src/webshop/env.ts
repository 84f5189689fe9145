/**
 * WebShop-lite: find and buy the product an instruction describes, with `search[...]` and
 * `click[...]` actions over a synthetic catalog. Pages, transitions and reward follow WebShop's text
 * environment; the observation adds RAGEN's list of available actions.
 *
 * Where this differs from the Python pair, on purpose:
 * - An action is valid when RAGEN's wrapper calls it valid (it is in the available-action list, or
 *   is a search on a page with a search box), and only valid actions act. The original would still
 *   run a search typed on a results or item page, and a "next >" past the last results page.
 * - The action list is appended as "\nYou must choose from these actions: a, b." (RAGEN writes
 *   "<page>.<hint lines>\n You must choose from these actions:a, b."); its hint lines are in
 *   `instructions`, in our own words, rather than in every observation.
 * - The first observation is the search page's text, not the bare instruction.
 */
import { readAction } from "../action.js";
import { validateConfig } from "../config.js";
import { textPanelSvg } from "../svg.js";
import type { Env, StepInfo, StepResult } from "../types.js";
import { loadWebShopCatalog, type WebShopCatalog, type WebShopProduct } from "./catalog.js";
import { WEBSHOP_CONFIG_SCHEMA, type WebShopConfig } from "./config.js";
import type { WebShopGoal } from "./goals.js";
import {
  WEBSHOP_BUTTONS,
  WEBSHOP_RESULTS_PER_PAGE,
  WEBSHOP_SEP,
  type WebShopPageKind,
  type WebShopPageState,
  webShopAvailableActions,
  webShopPageHits,
  webShopPageText,
} from "./pages.js";
import { type WebShopRewardBreakdown, webShopReward } from "./reward.js";

export interface WebShopStepInfo extends StepInfo {
  /** The episode ended with a purchase (RAGEN's success_purchase). */
  successPurchase: boolean;
  /** The goal product's page was opened at some point this episode. */
  successFind: boolean;
  /** The product the goal was made from ("" before the first reset). */
  goalAsin: string;
  /** Position of the goal in its split (-1 before the first reset). */
  goalIndex: number;
  /** The page now shown (null before the first reset). */
  pageKind: WebShopPageKind | null;
  /** The product bought, once bought. */
  purchasedAsin: string | null;
  /** How the reward was made up, once bought. */
  rewardBreakdown: WebShopRewardBreakdown | null;
}

/** Where a line ends for a regular expression's `.` (which the original's pattern is made of). */
const LINE_BREAK = /[\n\r\u2028\u2029]/;

/**
 * Splits `name[argument]` the way the original matches it (Python's re.match of `(.+)\[(.+)\]`):
 * greedy, so `name` runs to the last "[" that still has an argument and a "]" after it, and
 * `argument` to the last "]"; neither crosses a line break, and text after the "]" is ignored.
 * Found with two lastIndexOf scans, since the backtracking pattern is quadratic in the length of an
 * action with no closing bracket. Null when the action has no such shape.
 */
export function parseWebShopAction(action: string): { name: string; argument: string } | null {
  const lineEnd = action.search(LINE_BREAK);
  const line = lineEnd === -1 ? action : action.slice(0, lineEnd);
  const close = line.lastIndexOf("]");
  // The "[" leaves at least one character for the name before it and the argument after it.
  const open = close < 3 ? -1 : line.lastIndexOf("[", close - 2);
  if (open < 1) return null;
  return { name: line.slice(0, open), argument: line.slice(open + 1, close) };
}

export const WEBSHOP_INSTRUCTIONS = [
  "You are shopping in a web store. The observation shows the current page as text fields separated by [SEP], starting with your instruction.",
  "Find a product that matches the instruction (its kind, its attributes, the options asked for and the price limit), select the wanted options, and buy it.",
  "Actions: search[your keywords] on the search page; click[x] for any clickable on the page: click[<product id>] on a results page, click[next >] / click[< prev] to move between result pages, click[<option value>] to select an option, click[description] / click[features] / click[reviews] to read more, click[< prev] to go back, click[back to search] to start over, click[buy now] to buy.",
  "Tips: search for the kind of product and its key attributes, not for size or colour; read the titles before opening a product; select every option the instruction names before you buy; you have a limited number of actions, so buy something close enough rather than run out.",
  "Buying ends the episode. The reward (0 to 1) counts the matched attributes, options and price, scaled by how well the product's kind matches; 1 means a perfect match.",
].join("\n");

function emptyState(resultsPerPage = WEBSHOP_RESULTS_PER_PAGE): WebShopPageState {
  return {
    kind: "search",
    instruction: "",
    query: "",
    hits: [],
    page: 1,
    resultsPerPage,
    asin: null,
    options: {},
    subPage: null,
    reward: null,
  };
}

export class WebShopEnv implements Env<WebShopConfig, WebShopStepInfo> {
  readonly name = "webshop";
  readonly config: Readonly<WebShopConfig>;
  readonly actions = null;
  readonly instructions = WEBSHOP_INSTRUCTIONS;
  /** The shared catalog this env shops in. */
  readonly catalog: WebShopCatalog;

  private started = false;
  private ended = false;
  private state: WebShopPageState = emptyState();
  private currentGoal: WebShopGoal | null = null;
  private visited = new Set<string>();
  private breakdown: WebShopRewardBreakdown | null = null;
  private purchased: string | null = null;
  private readonly lookup = (asin: string): WebShopProduct | undefined => this.catalog.byAsin.get(asin);

  /** `config` may be partial; missing fields take their defaults. */
  constructor(config: Partial<WebShopConfig> = {}) {
    this.config = Object.freeze(validateConfig<WebShopConfig>("webshop", WEBSHOP_CONFIG_SCHEMA, config));
    this.catalog = loadWebShopCatalog(this.config.catalogSeed, this.config.numProducts);
  }

  get done(): boolean {
    return this.ended || !this.started;
  }

  /** The current goal (null before the first reset). */
  get goal(): WebShopGoal | null {
    return this.currentGoal;
  }

  /** A snapshot of the page state (for policies, tests and viewers). */
  get page(): Readonly<WebShopPageState> {
    return { ...this.state, options: { ...this.state.options } };
  }

  /** How many goals the configured split has; reset(seed) plays goal seed mod this number. */
  get splitSize(): number {
    return this.catalog.goals.size(this.config.split);
  }

  reset(seed: number): string {
    const size = this.splitSize;
    const whole = Number.isFinite(seed) ? Math.trunc(seed) : 0;
    const index = ((whole % size) + size) % size;
    this.currentGoal = this.catalog.goals.goal(this.config.split, index);
    this.state = { ...emptyState(this.config.resultsPerPage), instruction: this.currentGoal.instructionText };
    this.started = true;
    this.ended = false;
    this.visited = new Set();
    this.breakdown = null;
    this.purchased = null;
    return this.render();
  }

  step(action: string): StepResult<WebShopStepInfo> {
    if (this.done)
      return { observation: this.render(), reward: 0, done: true, info: this.info(false, false) };
    const before = this.signature();
    const text = readAction(action);
    const valid = text !== null && this.apply(text);
    const reward = this.ended && valid ? (this.breakdown?.reward ?? 0) : 0;
    return {
      observation: this.render(),
      reward,
      done: this.ended,
      info: this.info(valid, this.signature() !== before),
    };
  }

  /** The page text, plus the available actions when `showAvailableActions` is on ("" before reset). */
  render(): string {
    if (!this.started) return "";
    const text = this.pageText();
    const actions = this.availableActions();
    if (!this.config.showAvailableActions || actions.length === 0) return text;
    return `${text}\nYou must choose from these actions: ${actions.join(", ")}.`;
  }

  /** The page alone, without the action list. */
  pageText(): string {
    if (!this.started) return "";
    return webShopPageText(this.state, this.lookup, { showSelectedOptions: this.config.showSelectedOptions });
  }

  renderSvg(): string {
    const lines = this.started ? this.pageText().split(WEBSHOP_SEP) : ["(not started: call reset)"];
    const where = this.started ? this.state.kind : "idle";
    return textPanelSvg(lines, { title: `WebShop: ${where}`, width: 720 });
  }

  availableActions(): string[] {
    if (!this.started || this.ended) return [];
    return webShopAvailableActions(this.state, this.lookup);
  }

  private info(actionIsValid: boolean, actionIsEffective: boolean): WebShopStepInfo {
    return {
      success: this.breakdown !== null && this.breakdown.reward === 1,
      actionIsValid,
      actionIsEffective,
      successPurchase: this.purchased !== null,
      successFind: this.currentGoal !== null && this.visited.has(this.currentGoal.asin),
      goalAsin: this.currentGoal?.asin ?? "",
      goalIndex: this.currentGoal?.index ?? -1,
      pageKind: this.started ? this.state.kind : null,
      purchasedAsin: this.purchased,
      rewardBreakdown: this.breakdown,
    };
  }

  private signature(): string {
    const s = this.state;
    return JSON.stringify([s.kind, s.query, s.page, s.asin, s.options, s.subPage, s.hits.length]);
  }

  /** Perform `action` if it is valid here; returns whether it was. */
  private apply(action: string): boolean {
    const parsed = parseWebShopAction(action.trim());
    if (!parsed) return false;
    const name = parsed.name;
    const argument = parsed.argument.toLowerCase();
    if (name === "search") {
      if (this.state.kind !== "search") return false;
      this.search(argument, 1);
      return true;
    }
    if (name !== "click" || argument === WEBSHOP_BUTTONS.search) return false;
    if (!webShopAvailableActions(this.state, this.lookup).includes(`click[${argument}]`)) return false;
    this.click(argument);
    return true;
  }

  /** Run a search and show results page `page`; a search forgets the open product and options. */
  private search(query: string, page: number): void {
    const hits =
      query === this.state.query && this.state.kind !== "search" ? this.state.hits : this.runSearch(query);
    this.state = {
      ...this.state,
      kind: "results",
      query,
      hits,
      page,
      asin: null,
      options: {},
      subPage: null,
    };
  }

  private runSearch(query: string): string[] {
    return this.catalog.index.search(query).map((hit) => hit.id);
  }

  private click(clickable: string): void {
    const B = WEBSHOP_BUTTONS;
    const s = this.state;
    if (clickable === B.backToSearch) {
      this.state = { ...emptyState(this.config.resultsPerPage), instruction: s.instruction };
      return;
    }
    switch (s.kind) {
      case "results":
        if (clickable === B.next) this.state = { ...s, page: s.page + 1 };
        else if (clickable === B.prev) this.state = { ...s, page: s.page - 1 };
        else {
          const asin = webShopPageHits(s).find((a) => a.toLowerCase() === clickable);
          if (asin) this.openItem(asin);
        }
        return;
      case "item":
        if (clickable === B.prev) this.search(s.query, s.page);
        else if (clickable === B.buyNow) this.buy();
        else if (clickable === B.description || clickable === B.features || clickable === B.reviews) {
          this.state = { ...s, kind: "item-sub", subPage: clickable };
        } else this.selectOption(clickable);
        return;
      case "item-sub":
        if (clickable === B.prev) this.state = { ...s, kind: "item", subPage: null };
        return;
      default:
        return;
    }
  }

  private openItem(asin: string): void {
    this.visited.add(asin);
    this.state = { ...this.state, kind: "item", asin, options: {}, subPage: null };
  }

  private selectOption(value: string): void {
    const product = this.state.asin ? this.lookup(this.state.asin) : undefined;
    if (!product) return;
    // If two groups offer the same value the later one wins, as in the original's clickable map.
    let group: string | undefined;
    for (const [name, values] of Object.entries(product.options)) if (values.includes(value)) group = name;
    if (group === undefined) return;
    this.state = { ...this.state, options: { ...this.state.options, [group]: value } };
  }

  private buy(): void {
    const goal = this.currentGoal;
    const product = this.state.asin ? this.lookup(this.state.asin) : undefined;
    if (!goal || !product) return;
    this.breakdown = webShopReward(product, goal, product.purchasePrice, this.state.options);
    this.purchased = product.asin;
    this.ended = true;
    this.state = { ...this.state, kind: "done", reward: this.breakdown.reward };
  }
}
