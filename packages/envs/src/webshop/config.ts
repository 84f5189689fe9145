/** The config of WebShop-lite and its JSON Schema. */
import type { ConfigSchema } from "../config.js";
import { WEBSHOP_MAX_PRODUCTS, WEBSHOP_MIN_PRODUCTS } from "./catalog.js";
import type { WebShopSplit } from "./goals.js";

export interface WebShopConfig {
  /** Catalog size. */
  numProducts: number;
  /** Seed of the synthetic catalog (products, goals and their split). */
  catalogSeed: number;
  /** Which goals reset(seed) draws from. */
  split: WebShopSplit;
  /** Append RAGEN's "You must choose from these actions: ..." line to every observation. */
  showAvailableActions: boolean;
  /** Show the selected option values on the item page. */
  showSelectedOptions: boolean;
  /** Products per results page (the original's 10). */
  resultsPerPage: number;
}

export const WEBSHOP_CONFIG_SCHEMA: ConfigSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    numProducts: {
      type: "integer",
      minimum: WEBSHOP_MIN_PRODUCTS,
      maximum: WEBSHOP_MAX_PRODUCTS,
      default: 1000,
      description:
        "Number of products in the synthetic catalog (the original's num_products; its small set has 1000).",
    },
    catalogSeed: {
      type: "integer",
      minimum: 0,
      maximum: 4294967295,
      default: 0,
      description: "Seed of the synthetic catalog: products, goals and the goal shuffle behind the splits.",
    },
    split: {
      type: "string",
      enum: ["train", "val", "test"],
      default: "train",
      description:
        "Goal split reset(seed) draws from (RAGEN's reset mode): test = goals 0..499, val = 500..1499, train = the rest; goal = seed mod split size.",
    },
    showAvailableActions: {
      type: "boolean",
      default: true,
      description:
        'Append "You must choose from these actions: ..." to each observation, as RAGEN\'s wrapper does.',
    },
    resultsPerPage: {
      type: "integer",
      minimum: 1,
      maximum: 50,
      default: 10,
      description: "Products per results page (the original shows 10; fewer make shorter observations).",
    },
    showSelectedOptions: {
      type: "boolean",
      default: true,
      description:
        'Show "You have clicked <value>." for selected options on the item page (the original\'s simple text mode shows no selection).',
    },
  },
};
