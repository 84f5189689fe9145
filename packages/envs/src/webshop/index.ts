import type { Rng } from "../rng.js";
import type { Env, EnvSpec } from "../types.js";
import { WEBSHOP_CONFIG_SCHEMA, type WebShopConfig } from "./config.js";
import { WebShopEnv } from "./env.js";
import { webShopGuide } from "./guide.js";
import { webShopOracleAction, webShopRandomAction } from "./oracle.js";
import { webShopThought } from "./thought.js";

export {
  buildWebShopCatalog,
  formatWebShopPrice,
  generateWebShopProducts,
  loadWebShopCatalog,
  WEBSHOP_MAX_PRODUCTS,
  WEBSHOP_MIN_PRODUCTS,
  WEBSHOP_NO_PRICE_CAP,
  type WebShopCatalog,
  type WebShopProduct,
  webShopPriceUpper,
  webShopSearchText,
} from "./catalog.js";
export { WEBSHOP_CONFIG_SCHEMA, type WebShopConfig } from "./config.js";
export { parseWebShopAction, WEBSHOP_INSTRUCTIONS, WebShopEnv, type WebShopStepInfo } from "./env.js";
export { fuzzProcess, fuzzRatio, matchingCharacters, pythonRound, tokenSetRatio } from "./fuzzy.js";
export {
  buildWebShopGoals,
  WEBSHOP_SPLITS,
  type WebShopGoal,
  type WebShopGoalSet,
  type WebShopSplit,
  webShopInstructionText,
  webShopSplitSizes,
} from "./goals.js";
export {
  webShopGuide,
  webShopGuideAction,
  webShopProductPhrase,
  webShopWantedValues,
} from "./guide.js";
export {
  WEBSHOP_CATEGORIES,
  WEBSHOP_COLOR_WORDS,
  type WebShopAttributeKind,
  type WebShopAttributePools,
  type WebShopCategoryLexicon,
  type WebShopLeafLexicon,
  type WebShopOptionPool,
  webShopAttributePool,
} from "./lexicon.js";
export {
  webShopBestOptions,
  webShopBestReward,
  webShopOracleAction,
  webShopOracleQuery,
  webShopRandomAction,
} from "./oracle.js";
export {
  WEBSHOP_BUTTONS,
  WEBSHOP_RESULTS_PER_PAGE,
  WEBSHOP_SEP,
  type WebShopPageKind,
  type WebShopPageState,
  type WebShopSubPage,
  webShopAvailableActions,
  webShopClickables,
  webShopPageHits,
  webShopPageNodes,
  webShopPageText,
} from "./pages.js";
export {
  normalizeWebShopColor,
  type WebShopRewardBreakdown,
  type WebShopRewardGoal,
  type WebShopRewardProduct,
  webShopAttributeMatches,
  webShopOptionMatches,
  webShopReward,
  webShopTypeReward,
} from "./reward.js";
export {
  WEBSHOP_BM25_B,
  WEBSHOP_BM25_K1,
  WEBSHOP_SEARCH_TOP_K,
  type WebShopBm25Params,
  type WebShopSearchDocument,
  type WebShopSearchHit,
  WebShopSearchIndex,
} from "./search.js";
export { porterStem, WEBSHOP_STOPWORDS, webShopTerms, webShopWords } from "./text.js";
export { webShopThought } from "./thought.js";

/** Is `env` a WebShop env (its page, goal and catalog there to read)? */
export function isWebShopEnv(env: Env): env is WebShopEnv {
  return env instanceof WebShopEnv;
}

function asWebShopEnv(env: Env, policy: string): WebShopEnv {
  if (!isWebShopEnv(env)) throw new TypeError(`The webshop ${policy} policy cannot play env "${env.name}"`);
  return env;
}

/**
 * WebShop-lite: search a seeded synthetic catalog and buy the product an instruction describes.
 * "& EnvSpec" keeps the spec assignable to the registry's EnvSpec[], whose policies take any Env
 * (parameters are contravariant); the policies check that they were given a WebShopEnv.
 */
export const webShopSpec: EnvSpec<WebShopConfig, WebShopEnv> & EnvSpec = {
  name: "webshop",
  description: "WebShop-lite: search a seeded synthetic catalog and buy what the instruction asks for",
  schema: WEBSHOP_CONFIG_SCHEMA,
  create: (config) => new WebShopEnv(config),
  oracle: (env: Env, rng: Rng) => webShopOracleAction(asWebShopEnv(env, "oracle"), rng),
  random: (env: Env, rng: Rng) => webShopRandomAction(asWebShopEnv(env, "random"), rng),
  guide: (env: Env) => webShopGuide(asWebShopEnv(env, "guide")),
  thought: webShopThought,
  presets: {
    WebShop: {
      config: {},
      maxActionsPerTraj: 9,
      description: "WebShop-lite with RAGEN's limits: 1000 products, train goals, at most 9 actions",
    },
    WebShopCompact: {
      config: { resultsPerPage: 3 },
      maxActionsPerTraj: 9,
      description: "WebShop-lite with 3 results per page: a third of the observation text, for small models",
    },
  },
};
