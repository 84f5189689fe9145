import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  createEnv,
  EnvConfigError,
  evaluatePolicy,
  getEnvSpec,
  listPresets,
  oracleAction,
  parseWebShopAction,
  Rng,
  randomAction,
  WebShopEnv,
  type WebShopPageState,
  type WebShopProduct,
  webShopAvailableActions,
  webShopBestReward,
  webShopPageText,
  webShopSpec,
} from "../src/index.js";

const SEP = " [SEP] ";

const tee: WebShopProduct = {
  asin: "B0TEST0001",
  Title: "Acme Quick Dry Polo Shirt for Men",
  Description: "The Acme polo shirt for men. Highlights: quick dry.",
  BulletPoints: ["SLIM FIT - Nice", "Made with cotton spandex, nice"],
  query: "men's shirts",
  category: "fashion",
  product_category: "Clothing, Shoes & Jewelry › Men › Shirts",
  Attributes: ["quick dry", "slim fit", "cotton spandex"],
  options: { color: ["black", "navy"], size: ["small", "large"] },
  pricing: [19.99],
  Price: "$19.99",
  Rating: "N.A.",
  purchasePrice: 19.99,
  titleNouns: ["polo", "shirt"],
  brand: "Acme",
  noun: "polo shirt",
  audience: "for men",
  attributeKinds: { "quick dry": "prop", "slim fit": "prop", "cotton spandex": "item" },
  instructionAttributes: ["quick dry"],
  priceUpper: 30,
};
const lookup = (asin: string) => (asin === tee.asin ? tee : undefined);
const base: WebShopPageState = {
  kind: "search",
  instruction: "Find me a shirt",
  query: "",
  hits: [],
  page: 1,
  asin: null,
  options: {},
  subPage: null,
  reward: null,
};
const show = { showSelectedOptions: true };

describe("page texts", () => {
  it("search page", () => {
    expect(webShopPageText(base, lookup, show)).toBe(
      "WebShop [SEP] Instruction: [SEP] Find me a shirt [SEP] Search",
    );
    expect(webShopAvailableActions(base, lookup)).toEqual(["search[<content>]"]);
  });

  it("results pages: < Prev only after page 1, Next > always, 10 products a page", () => {
    // The same product twelve times: its link is one clickable per page, as in the original's map.
    const hits = Array.from({ length: 12 }, () => tee.asin);
    const page1 = { ...base, kind: "results" as const, query: "shirt", hits };
    const row = `B0TEST0001${SEP}Acme Quick Dry Polo Shirt for Men${SEP}$19.99`;
    expect(webShopPageText(page1, lookup, show)).toBe(
      `Instruction:${SEP}Find me a shirt${SEP}Back to Search${SEP}Page 1 (Total results: 12)${SEP}Next >${SEP}${Array(10).fill(row).join(SEP)}`,
    );
    const page2 = { ...page1, page: 2 };
    expect(webShopPageText(page2, lookup, show)).toBe(
      `Instruction:${SEP}Find me a shirt${SEP}Back to Search${SEP}Page 2 (Total results: 12)${SEP}< Prev${SEP}Next >${SEP}${row}${SEP}${row}`,
    );
    expect(webShopAvailableActions(page2, lookup)).toEqual([
      "click[back to search]",
      "click[< prev]",
      "click[next >]",
      "click[b0test0001]",
    ]);
    // Past the end: the page still says "Next >", but (as in RAGEN) it is not offered.
    const page3 = { ...page1, page: 3 };
    expect(webShopPageText(page3, lookup, show)).toBe(
      `Instruction:${SEP}Find me a shirt${SEP}Back to Search${SEP}Page 3 (Total results: 12)${SEP}< Prev${SEP}Next >`,
    );
    expect(webShopAvailableActions(page3, lookup)).toEqual(["click[back to search]", "click[< prev]"]);
  });

  it("item page, with and without the selected options shown", () => {
    const item = { ...base, kind: "item" as const, query: "shirt", hits: [tee.asin], asin: tee.asin };
    const head = `Instruction:${SEP}Find me a shirt${SEP}Back to Search${SEP}< Prev${SEP}color${SEP}black${SEP}navy${SEP}size${SEP}small${SEP}large`;
    const tail = `Acme Quick Dry Polo Shirt for Men${SEP}Price: $19.99${SEP}Rating: N.A.${SEP}Description${SEP}Features${SEP}Reviews${SEP}Buy Now`;
    expect(webShopPageText(item, lookup, show)).toBe(`${head}${SEP}${tail}`);
    const chosen = { ...item, options: { size: "large", color: "navy" } };
    expect(webShopPageText(chosen, lookup, show)).toBe(
      `${head}${SEP}You have clicked navy.${SEP}You have clicked large.${SEP}${tail}`,
    );
    expect(webShopPageText(chosen, lookup, { showSelectedOptions: false })).toBe(`${head}${SEP}${tail}`);
    expect(webShopAvailableActions(item, lookup)).toEqual([
      "click[back to search]",
      "click[< prev]",
      "click[description]",
      "click[features]",
      "click[reviews]",
      "click[buy now]",
      "click[black]",
      "click[navy]",
      "click[small]",
      "click[large]",
    ]);
  });

  it("sub-pages and the done page", () => {
    const sub = { ...base, kind: "item-sub" as const, asin: tee.asin, hits: [tee.asin], query: "shirt" };
    const head = `Instruction:${SEP}Find me a shirt${SEP}Back to Search${SEP}< Prev`;
    expect(webShopPageText({ ...sub, subPage: "description" }, lookup, show)).toBe(
      `${head}${SEP}The Acme polo shirt for men. Highlights: quick dry.`,
    );
    expect(webShopPageText({ ...sub, subPage: "features" }, lookup, show)).toBe(
      `${head}${SEP}SLIM FIT - Nice${SEP}Made with cotton spandex, nice`,
    );
    expect(webShopPageText({ ...sub, subPage: "reviews" }, lookup, show)).toBe(
      `${head}${SEP}No reviews found`,
    );
    expect(webShopAvailableActions({ ...sub, subPage: "reviews" }, lookup)).toEqual([
      "click[back to search]",
      "click[< prev]",
    ]);
    const done = { ...base, kind: "done" as const, reward: 0.5 };
    expect(webShopPageText(done, lookup, show)).toBe(
      `Thank you for shopping with us!${SEP}Your score (min 0.0, max 1.0)${SEP}0.5`,
    );
    expect(webShopPageText({ ...done, reward: 1 }, lookup, show)).toMatch(/\[SEP\] 1\.0$/);
    expect(webShopAvailableActions(done, lookup)).toEqual([]);
  });
});

/** A fresh env on the default catalog, reset to `seed`. */
function envAt(seed = 3, config: object = {}): WebShopEnv {
  const env = new WebShopEnv(config);
  env.reset(seed);
  return env;
}

describe("WebShopEnv transitions", () => {
  it("starts on the search page with the goal's instruction and the action list", () => {
    const env = new WebShopEnv();
    const obs = env.reset(3);
    const goal = env.goal!;
    expect(goal.index).toBe(3);
    expect(obs).toBe(
      `WebShop [SEP] Instruction: [SEP] ${goal.instructionText} [SEP] Search\nYou must choose from these actions: search[<content>].`,
    );
    expect(env.pageText()).toBe(`WebShop [SEP] Instruction: [SEP] ${goal.instructionText} [SEP] Search`);
    expect(env.render()).toBe(obs);
    expect(env.availableActions()).toEqual(["search[<content>]"]);
    expect(env.done).toBe(false);
    expect(env.actions).toBeNull();
    expect(new WebShopEnv({ showAvailableActions: false }).reset(3)).toBe(env.pageText());
  });

  it("paginates results: Next >, < Prev, and an empty page past the end", () => {
    const env = envAt();
    const instruction = env.goal!.instructionText;
    let r = env.step(`search[${env.goal!.name}]`);
    const hits = env.page.hits;
    expect(hits).toHaveLength(50);
    expect(hits).toEqual(env.catalog.index.search(env.goal!.name.toLowerCase()).map((h) => h.id));
    const rows = (k: number) =>
      hits
        .slice((k - 1) * 10, k * 10)
        .map((asin) => {
          const p = env.catalog.byAsin.get(asin)!;
          return `${p.asin}${SEP}${p.Title}${SEP}${p.Price}`;
        })
        .join(SEP);
    const head = `Instruction:${SEP}${instruction}${SEP}Back to Search`;
    expect(env.pageText()).toBe(`${head}${SEP}Page 1 (Total results: 50)${SEP}Next >${SEP}${rows(1)}`);
    expect(r.info).toMatchObject({ actionIsValid: true, actionIsEffective: true, pageKind: "results" });
    env.step("click[next >]");
    expect(env.pageText()).toBe(
      `${head}${SEP}Page 2 (Total results: 50)${SEP}< Prev${SEP}Next >${SEP}${rows(2)}`,
    );
    env.step("click[< prev]");
    expect(env.page.page).toBe(1);
    for (let k = 2; k <= 6; k++) env.step("click[next >]");
    expect(env.pageText()).toBe(`${head}${SEP}Page 6 (Total results: 50)${SEP}< Prev${SEP}Next >`);
    expect(env.availableActions()).toEqual(["click[back to search]", "click[< prev]"]);
    r = env.step("click[next >]");
    expect(r.info.actionIsValid).toBe(false);
    expect(env.page.page).toBe(6);
  });

  it("keeps selected options across sub-pages and forgets them on < Prev, a new search or Back to Search", () => {
    const env = envAt();
    const goal = env.goal!;
    env.step(`search[${goal.name}]`);
    let r = env.step(`click[${goal.asin.toLowerCase()}]`);
    expect(r.info).toMatchObject({ pageKind: "item", successFind: true });
    const product = env.catalog.byAsin.get(goal.asin)!;
    const [name, values] = Object.entries(product.options)[0]!;
    const value = values[1]!;
    r = env.step(`click[${value.toUpperCase()}]`); // arguments are lowercased
    expect(r.info).toMatchObject({ actionIsValid: true, actionIsEffective: true });
    expect(env.page.options).toEqual({ [name]: value });
    expect(env.pageText()).toContain(`${SEP}You have clicked ${value}.${SEP}${product.Title}`);
    // Clicking the selected value again changes nothing.
    expect(env.step(`click[${value}]`).info).toMatchObject({ actionIsValid: true, actionIsEffective: false });

    env.step("click[features]");
    expect(env.page.kind).toBe("item-sub");
    expect(env.pageText()).toBe(
      `Instruction:${SEP}${goal.instructionText}${SEP}Back to Search${SEP}< Prev${SEP}${product.BulletPoints.join(SEP)}`,
    );
    env.step("click[< prev]");
    expect(env.page.kind).toBe("item");
    expect(env.page.options).toEqual({ [name]: value });

    env.step("click[< prev]");
    expect(env.page).toMatchObject({ kind: "results", page: 1, asin: null, options: {} });
    env.step(`click[${goal.asin.toLowerCase()}]`);
    expect(env.page.options).toEqual({});
    expect(env.pageText()).not.toContain("You have clicked");

    env.step(`click[${value}]`);
    env.step("click[back to search]");
    expect(env.page).toMatchObject({ kind: "search", query: "", hits: [], asin: null, options: {} });
    expect(env.pageText()).toBe(`WebShop [SEP] Instruction: [SEP] ${goal.instructionText} [SEP] Search`);
    env.step(`search[${goal.name}]`);
    env.step(`click[${goal.asin.toLowerCase()}]`);
    expect(env.page.options).toEqual({});
  });

  it("buys: done, reward and its breakdown, success and the done page", () => {
    const env = envAt();
    const goal = env.goal!;
    env.step(`search[${goal.name}]`);
    env.step(`click[${goal.asin.toLowerCase()}]`);
    for (const value of Object.values(goal.goalOptions)) env.step(`click[${value}]`);
    const r = env.step("click[buy now]");
    expect(r.reward).toBe(1);
    expect(r.done).toBe(true);
    expect(r.observation).toBe(`Thank you for shopping with us!${SEP}Your score (min 0.0, max 1.0)${SEP}1.0`);
    expect(r.info).toMatchObject({
      success: true,
      actionIsValid: true,
      actionIsEffective: true,
      successPurchase: true,
      successFind: true,
      goalAsin: goal.asin,
      purchasedAsin: goal.asin,
      pageKind: "done",
    });
    expect(r.info.rewardBreakdown).toMatchObject({ reward: 1, rType: 1, rPrice: true });
    expect(env.done).toBe(true);
    expect(env.availableActions()).toEqual([]);
    const after = env.step("click[buy now]");
    expect(after).toMatchObject({ observation: r.observation, reward: 0, done: true });
    expect(after.info).toMatchObject({ actionIsValid: false, success: true });
  });

  it("gives partial reward for the goal product without its options", () => {
    const env = envAt();
    const goal = env.goal!;
    env.step(`search[${goal.name}]`);
    env.step(`click[${goal.asin.toLowerCase()}]`);
    const r = env.step("click[buy now]");
    const n = goal.attributes.length;
    const k = Object.keys(goal.goalOptions).length;
    expect(r.reward).toBe((n + 1) / (n + k + 1));
    expect(r.info.success).toBe(false);
  });

  it("treats malformed, unknown and out-of-place actions as no-ops", () => {
    const env = envAt();
    const goal = env.goal!;
    const atSearch = [
      "",
      "   ",
      "buy",
      "search",
      "search[]",
      "click[]",
      "click[search]",
      "click[buy now]",
      "click[back to search]",
      "Search[shirt]",
      "look[shirt]",
      "search\n[shirt]",
    ];
    const noOp = (action: string) => {
      const before = env.render();
      const r = env.step(action);
      expect(r, action).toMatchObject({ observation: before, reward: 0, done: false });
      expect(r.info.actionIsValid, action).toBe(false);
      expect(r.info.actionIsEffective, action).toBe(false);
    };
    for (const action of atSearch) noOp(action);
    env.step(`search[${goal.name}]`);
    for (const action of [
      "search[shirt]",
      "click[< prev]",
      "click[buy now]",
      "click[b0zzzzzzzz]",
      "click[navy]",
    ]) {
      noOp(action);
    }
    env.step(`click[${goal.asin.toLowerCase()}]`);
    for (const action of ["click[next >]", "search[shirt]", "click[not an option]", "click[b0zzzzzzzz]"])
      noOp(action);
    expect(env.page.kind).toBe("item");
  });

  it("parses like the original: re.match of name[argument], greedy, argument lowercased", () => {
    const env = envAt();
    // Text after the closing bracket is ignored (re.match anchors only at the start).
    expect(env.step("  search[Polo SHIRT] please ").info.actionIsValid).toBe(true);
    expect(env.page.query).toBe("polo shirt");
    env.step("click[back to search]");
    // The name runs to the last "[": "search[a" is not an action.
    expect(env.step("search[a[b]").info.actionIsValid).toBe(false);
    // The argument runs to the last "]".
    expect(env.step("search[a]b]").info.actionIsValid).toBe(true);
    expect(env.page.query).toBe("a]b");
  });

  it("returns the empty observation before reset and never throws", () => {
    const env = new WebShopEnv();
    expect(env.render()).toBe("");
    expect(env.done).toBe(true);
    expect(env.availableActions()).toEqual([]);
    const r = env.step("search[anything]");
    expect(r).toMatchObject({ observation: "", reward: 0, done: true });
    expect(r.info).toMatchObject({ actionIsValid: false, pageKind: null, goalAsin: "" });
    expect(env.renderSvg()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  });

  it("picks goal seed mod split size, for any seed", () => {
    const env = new WebShopEnv({ split: "test" });
    expect(env.splitSize).toBe(500);
    env.reset(503);
    expect(env.goal!.index).toBe(3);
    env.reset(-1);
    expect(env.goal!.index).toBe(499);
    env.reset(2 ** 40 + 7);
    expect(env.goal!.index).toBe((2 ** 40 + 7) % 500);
    expect(env.goal!).toEqual(env.catalog.goals.goal("test", env.goal!.index));
  });

  it("renders the page as a standalone SVG text panel", () => {
    const env = envAt();
    const svg = env.renderSvg();
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.endsWith("</svg>")).toBe(true);
    expect(svg).toContain("WebShop: search");
  });
});

describe("webShopSpec", () => {
  it("shows as many results per page as configured, and the oracle pages through them", () => {
    const compact = createEnv<WebShopEnv>("WebShopCompact");
    const full = createEnv<WebShopEnv>("WebShop");
    for (const env of [compact, full]) {
      env.reset(4);
      env.step(oracleAction(env));
    }
    const asins = (env: WebShopEnv) => env.availableActions().filter((a) => /^click\[b0/.test(a));
    expect(asins(compact)).toHaveLength(3);
    expect(asins(full)).toHaveLength(10);
    expect(compact.render().length).toBeLessThan(0.6 * full.render().length);
    expect(evaluatePolicy("WebShopCompact", "oracle", { seeds: [0, 1, 2, 3, 4, 5, 6, 7] }).successRate).toBe(
      1,
    );
  });

  it("registers as webshop with a strict schema and the WebShop preset", () => {
    expect(getEnvSpec("webshop")).toBe(webShopSpec);
    expect(listPresets().WebShop).toMatchObject({ env: "webshop", maxActionsPerTraj: 9, config: {} });
    const env = createEnv<WebShopEnv>("webshop");
    expect(env.config).toEqual({
      numProducts: 1000,
      catalogSeed: 0,
      split: "train",
      showAvailableActions: true,
      showSelectedOptions: true,
      resultsPerPage: 10,
    });
    expect(createEnv<WebShopEnv>("WebShop").config.numProducts).toBe(1000);
    expect(() => createEnv("webshop", { numProducts: 999 })).toThrow(EnvConfigError);
    expect(() => createEnv("webshop", { split: "dev" })).toThrow(EnvConfigError);
    expect(() => createEnv("webshop", { num_products: 1000 })).toThrow(EnvConfigError);
    expect(() => createEnv("webshop", { catalogSeed: 1.5 })).toThrow(EnvConfigError);
  });

  it("documents every config field with a default", () => {
    const properties = webShopSpec.schema.properties as Record<string, Record<string, unknown>>;
    for (const [field, property] of Object.entries(properties)) {
      expect(property.default, field).toBeDefined();
      expect(typeof property.description, field).toBe("string");
    }
  });
});

describe("policies", () => {
  it("the oracle succeeds on every one of 300 seeds within 9 actions", () => {
    const env = createEnv<WebShopEnv>("WebShop");
    for (let seed = 0; seed < 300; seed++) {
      env.reset(seed);
      const rng = new Rng(seed, "oracle");
      let steps = 0;
      let last: ReturnType<WebShopEnv["step"]> | undefined;
      while (!env.done && steps < 9) {
        last = env.step(oracleAction(env, rng));
        steps++;
      }
      expect(last?.info.success, `seed ${seed}`).toBe(true);
    }
  });

  it("the oracle buys the best hit when the goal product is not found", () => {
    const env = new WebShopEnv();
    let played = 0;
    for (let seed = 0; seed < 200 && played < 5; seed++) {
      env.reset(seed);
      const goal = env.goal!;
      // A broad query (the leaf's scrape query) that may miss the goal product among its 50 hits.
      env.step(`search[${goal.query}]`);
      if (env.page.hits.length === 0 || env.page.hits.includes(goal.asin)) continue;
      const hits = env.page.hits;
      const rng = new Rng(seed);
      let last: ReturnType<WebShopEnv["step"]> | undefined;
      for (let steps = 0; !env.done && steps < 20; steps++) last = env.step(oracleAction(env, rng));
      expect(last?.done).toBe(true);
      expect(hits).toContain(last!.info.purchasedAsin);
      const best = Math.max(...hits.map((asin) => webShopBestReward(env.catalog.byAsin.get(asin)!, goal)));
      expect(last!.reward).toBe(best);
      if (best > 0) played++;
    }
    expect(played).toBe(5);
  });

  it("the random policy types a search from instruction words, then clicks available actions", () => {
    const env = envAt();
    const rng = new Rng(1);
    const first = randomAction(env, rng);
    expect(first).toMatch(/^search\[[a-z0-9 ]+\]$/);
    const words = new Set(env.goal!.instructionText.toLowerCase().split(/[^a-z0-9]+/));
    for (const w of first.slice(7, -1).split(" ")) expect(words.has(w)).toBe(true);
    env.step(first);
    for (let i = 0; i < 20 && !env.done; i++) {
      const action = randomAction(env, rng);
      if (env.page.kind !== "search") expect(env.availableActions()).toContain(action);
      expect(env.step(action).info.actionIsValid).toBe(true);
    }
  });
});

describe("fuzzing", () => {
  const buttons = [
    "click[back to search]",
    "click[next >]",
    "click[< prev]",
    "click[buy now]",
    "click[description]",
  ];
  const actionArb = fc.oneof(
    fc.nat({ max: 40 }).map((i) => ({ pick: i })),
    fc.string({ maxLength: 30 }).map((s) => ({ raw: s })),
    fc.constantFrom(...buttons).map((s) => ({ raw: s })),
    fc.string({ maxLength: 20 }).map((s) => ({ raw: `search[${s}]` })),
    fc.string({ maxLength: 20 }).map((s) => ({ raw: `click[${s}]` })),
  );

  /** Play a script: a pick chooses among the available actions (a search types "shirt"). */
  function play(seed: number, script: ({ pick: number } | { raw: string })[]) {
    const env = new WebShopEnv();
    const trace: unknown[] = [env.reset(seed)];
    for (const step of script) {
      let action: string;
      if ("raw" in step) action = step.raw;
      else {
        const actions = env.availableActions();
        action = actions.length === 0 ? "click[buy now]" : actions[step.pick % actions.length]!;
        if (action === "search[<content>]") action = "search[shirt]";
      }
      const wasDone = env.done;
      const r = env.step(action);
      expect(r.reward).toBeGreaterThanOrEqual(0);
      expect(r.reward).toBeLessThanOrEqual(1);
      expect(r.observation).toBe(env.render());
      if (wasDone) expect(r).toMatchObject({ reward: 0, done: true, info: { actionIsValid: false } });
      if (r.reward > 0) expect(r.done).toBe(true);
      if (r.done && !wasDone) {
        const parsed = /^(.+)\[(.+)\]/.exec(action.trim());
        expect([parsed?.[1], parsed?.[2]?.toLowerCase()]).toEqual(["click", "buy now"]);
      }
      if (!r.info.actionIsValid) expect(r.info.actionIsEffective).toBe(false);
      trace.push(r);
    }
    return trace;
  }

  it("never throws, keeps rewards in [0, 1] and ends only at Buy Now; replays identically", () => {
    fc.assert(
      fc.property(fc.nat({ max: 1_000_000 }), fc.array(actionArb, { maxLength: 25 }), (seed, script) => {
        expect(play(seed, script)).toEqual(play(seed, script));
      }),
      { numRuns: 150 },
    );
  });
});

describe("parseWebShopAction", () => {
  /** The original's pattern, as a backtracking regular expression (quadratic on long input). */
  const ORIGINAL = /^(.+)\[(.+)\]/;

  it("splits an action exactly as the original pattern does", () => {
    const char = fc.constantFrom("[", "]", "a", "b", " ", "\n", "\r", "\u2028", "é");
    const text = fc.oneof(
      fc.array(char, { maxLength: 16 }).map((cs) => cs.join("")),
      fc.string({ maxLength: 16 }),
    );
    fc.assert(
      fc.property(text, (action) => {
        const match = ORIGINAL.exec(action);
        const expected = match === null ? null : { name: match[1], argument: match[2] };
        expect(parseWebShopAction(action)).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
    expect(parseWebShopAction("click[[buy now]]")).toEqual({ name: "click[", argument: "buy now]" });
    expect(parseWebShopAction("search[red shoes] and more")).toEqual({
      name: "search",
      argument: "red shoes",
    });
    expect(parseWebShopAction("search[]")).toBeNull();
  });

  it("takes linear time on a megabyte with no closing bracket", () => {
    const huge = `search[${"a".repeat(1 << 20)}`;
    const start = performance.now();
    expect(parseWebShopAction(huge)).toBeNull();
    expect(parseWebShopAction(`${huge}]`)?.argument).toHaveLength(1 << 20);
    expect(parseWebShopAction("[".repeat(1 << 20))).toBeNull();
    expect(performance.now() - start).toBeLessThan(50);
  });

  it("an over-long or non-string action is invalid and changes nothing", () => {
    const env = new WebShopEnv();
    const first = env.reset(0);
    const long = `search[${"shoe ".repeat(2000)}]`;
    expect(env.step(long).info.actionIsValid).toBe(false);
    expect(env.render()).toBe(first);
    expect(env.step(42 as unknown as string).info.actionIsValid).toBe(false);
    expect(env.step("search[shoe]").info.actionIsValid).toBe(true);
  });
});
