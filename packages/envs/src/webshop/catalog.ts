/**
 * A seeded synthetic product catalog shaped like WebShop's scraped one. Products come from the
 * lexicon: brand + attribute phrases + product-type noun in the title, the remaining attributes in
 * the bullet points, a few neutral sentences in the description. About 40% of products are near
 * misses of an earlier product (same noun with other attributes, same attributes with another noun,
 * or the same product with other options and price), so a task needs reading, not just clicking the
 * first hit. Catalogs (with their search index and goals) are cached per (catalogSeed, numProducts).
 */
import { Rng } from "../rng.js";
import { buildWebShopGoals, type WebShopGoalSet } from "./goals.js";
import {
  WEBSHOP_BENEFITS,
  WEBSHOP_CATEGORIES,
  WEBSHOP_GENERIC_BULLETS,
  type WebShopAttributeKind,
  type WebShopCategoryLexicon,
  type WebShopLeafLexicon,
  webShopAttributePool,
} from "./lexicon.js";
import type { WebShopProduct } from "./product.js";
import { WebShopSearchIndex } from "./search.js";

export type { WebShopProduct } from "./product.js";

export interface WebShopCatalog {
  catalogSeed: number;
  products: readonly WebShopProduct[];
  byAsin: ReadonlyMap<string, WebShopProduct>;
  index: WebShopSearchIndex;
  goals: WebShopGoalSet;
}

export const WEBSHOP_MIN_PRODUCTS = 1000;
export const WEBSHOP_MAX_PRODUCTS = 20000;
/** No price cap: the value the original uses when fewer than two caps are possible. */
export const WEBSHOP_NO_PRICE_CAP = 1_000_000;
/** Candidate caps: 10, 20, ..., 990 (the original's PRICE_RANGE). */
const PRICE_CAPS = Array.from({ length: 99 }, (_, i) => 10 * (i + 1));
const ASIN_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const CENT_ENDINGS = [0.99, 0.49, 0.95, 0.89, 0.0, 0.5];

/**
 * The price cap rule: the next four multiples of 10 above `price` (within 10..990); with at least
 * two, sample two and keep the larger; otherwise no cap.
 */
export function webShopPriceUpper(price: number, rng: Rng): number {
  const candidates = PRICE_CAPS.filter((cap) => cap > price).slice(0, 4);
  if (candidates.length < 2) return WEBSHOP_NO_PRICE_CAP;
  const [a, b] = rng.sample(candidates, 2) as [number, number];
  return Math.max(a, b);
}

export function formatWebShopPrice(pricing: readonly number[]): string {
  return pricing.map((p) => `$${p.toFixed(2)}`).join(" to ");
}

interface Leaf {
  category: WebShopCategoryLexicon;
  leaf: WebShopLeafLexicon;
  pool: { phrase: string; kind: WebShopAttributeKind }[];
}

/** The parts a product is made of, before its texts are written. */
interface Draft {
  leaf: Leaf;
  noun: string;
  brand: string;
  attributes: { phrase: string; kind: WebShopAttributeKind }[];
  options: Record<string, string[]>;
  pricing: number[];
}

const LEAVES: readonly Leaf[] = WEBSHOP_CATEGORIES.flatMap((category) =>
  category.leaves.map((leaf) => ({ category, leaf, pool: webShopAttributePool(category, leaf) })),
);

function titleCase(phrase: string): string {
  return phrase
    .split(" ")
    .map((w) => (w === "for" || w === "and" || w === "with" ? w : w.charAt(0).toUpperCase() + w.slice(1)))
    .join(" ");
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

function drawPrice(rng: Rng, lo: number, hi: number): number {
  const whole = Math.floor(rng.uniform(lo, hi));
  return Math.max(1, round2(whole + rng.choice(CENT_ENDINGS)));
}

function drawPricing(rng: Rng, leaf: WebShopLeafLexicon): number[] {
  const p = drawPrice(rng, leaf.price[0], leaf.price[1]);
  // A price range, as some scraped products show ("$12.99 to $18.49").
  if (rng.bool(0.15)) return [p, round2(p * rng.uniform(1.1, 1.6))];
  return [p];
}

function drawOptions(rng: Rng, leaf: WebShopLeafLexicon): Record<string, string[]> {
  const options: Record<string, string[]> = {};
  for (const pool of leaf.options) {
    if (!rng.bool(0.9)) continue;
    const count = rng.intRange(2, Math.min(4, pool.values.length) + 1);
    const chosen = new Set(rng.sample(pool.values, count));
    options[pool.name] = pool.values.filter((v) => chosen.has(v));
  }
  return options;
}

function drawAttributes(rng: Rng, leaf: Leaf): Draft["attributes"] {
  return rng.sample(leaf.pool, rng.intRange(3, 6));
}

function freshDraft(rng: Rng): Draft {
  const leaf = rng.choice(LEAVES);
  return {
    leaf,
    noun: rng.choice(leaf.leaf.nouns),
    brand: rng.choice(leaf.category.brands),
    attributes: drawAttributes(rng, leaf),
    options: drawOptions(rng, leaf.leaf),
    pricing: drawPricing(rng, leaf.leaf),
  };
}

/** A near miss of `base`: one thing changed that a careful shopper would notice. */
function nearMissDraft(rng: Rng, base: Draft): Draft {
  const kind = rng.choice(["attributes", "noun", "options"] as const);
  const { leaf } = base;
  const draft: Draft = {
    ...base,
    options: drawOptions(rng, leaf.leaf),
    pricing: drawPricing(rng, leaf.leaf),
  };
  if (kind === "attributes") {
    // Same noun, one or two attributes swapped for others.
    const swaps = Math.min(rng.intRange(1, 3), base.attributes.length);
    const keep = rng.sample(base.attributes, base.attributes.length - swaps);
    const unused = leaf.pool.filter((a) => !base.attributes.some((b) => b.phrase === a.phrase));
    draft.attributes = rng.shuffle([...keep, ...rng.sample(unused, Math.min(swaps, unused.length))]);
    if (rng.bool(0.5)) draft.brand = rng.choice(leaf.category.brands);
  } else if (kind === "noun") {
    // Same attributes, another product type (preferably sharing no word, so it is truly different).
    const words = new Set(base.noun.split(" "));
    const others = leaf.leaf.nouns.filter((n) => n !== base.noun);
    const disjoint = others.filter((n) => !n.split(" ").some((w) => words.has(w)));
    draft.noun = rng.choice(disjoint.length > 0 ? disjoint : others);
    draft.brand = rng.choice(leaf.category.brands);
  } else {
    // Same product line at another price (often above the base's cap).
    const p = round2(base.pricing[0]! * rng.uniform(1.15, 1.8));
    draft.pricing = [p];
  }
  return draft;
}

function drawAsin(rng: Rng, used: Set<string>): string {
  for (;;) {
    let asin = "B0";
    for (let i = 0; i < 8; i++) asin += ASIN_ALPHABET[rng.int(ASIN_ALPHABET.length)];
    if (!used.has(asin)) {
      used.add(asin);
      return asin;
    }
  }
}

function attributeBullet(rng: Rng, phrase: string, kind: WebShopAttributeKind): string {
  const benefit = rng.choice(WEBSHOP_BENEFITS);
  if (kind === "prop") return `${titleCase(phrase).toUpperCase()} - ${capitalize(benefit)}`;
  if (kind === "item") return `Made with ${phrase}, ${benefit}`;
  return `A great pick for ${phrase}, ${benefit}`;
}

function writeProduct(rng: Rng, draft: Draft, asin: string): WebShopProduct {
  const { category, leaf } = draft.leaf;
  const attrs = rng.shuffle(draft.attributes.slice());
  const titleCount = Math.min(attrs.length, rng.intRange(1, 3));
  const inTitle = attrs.slice(0, titleCount);
  const inBullets = attrs.slice(titleCount);

  const props = inTitle.filter((a) => a.kind === "prop").map((a) => titleCase(a.phrase));
  const items = inTitle.filter((a) => a.kind === "item").map((a) => titleCase(a.phrase));
  const uses = inTitle.filter((a) => a.kind === "use").map((a) => titleCase(a.phrase));
  const titleParts = [draft.brand, ...props, titleCase(draft.noun)];
  if (leaf.audience) titleParts.push(titleCase(leaf.audience));
  if (items.length > 0) titleParts.push(`with ${items.join(" and ")}`);
  if (uses.length > 0) titleParts.push(`for ${uses.join(" and ")}`);
  const Title = titleParts.join(" ");

  const bullets = inBullets.map((a) => attributeBullet(rng, a.phrase, a.kind));
  bullets.push(rng.choice(WEBSHOP_GENERIC_BULLETS));
  const BulletPoints = rng.shuffle(bullets);

  const [fillerA, fillerB] = rng.sample(category.fillers, 2);
  const highlights = rng.sample(attrs, Math.max(1, Math.floor(attrs.length / 2))).map((a) => a.phrase);
  const audience = leaf.audience ? ` ${leaf.audience}` : "";
  const Description = `The ${draft.brand} ${draft.noun}${audience}. ${fillerA} ${fillerB} Highlights: ${highlights.join(", ")}.`;

  const Attributes = attrs.map((a) => a.phrase);
  const pricing = draft.pricing;
  const purchasePrice = pricing.length === 1 ? pricing[0]! : round2(rng.uniform(pricing[0]!, pricing[1]!));
  const instructionCount = Math.min(Attributes.length, rng.intRange(1, 4));
  return {
    asin,
    Title,
    Description,
    BulletPoints,
    query: leaf.query,
    category: category.name,
    product_category: [category.top, ...leaf.path].join(" › "),
    Attributes,
    options: draft.options,
    pricing,
    Price: formatWebShopPrice(pricing),
    Rating: "N.A.",
    purchasePrice,
    titleNouns: [...new Set(draft.noun.split(" "))],
    brand: draft.brand,
    noun: draft.noun,
    audience: leaf.audience,
    attributeKinds: Object.fromEntries(attrs.map((a) => [a.phrase, a.kind])),
    instructionAttributes: rng.sample(Attributes, instructionCount),
    priceUpper: webShopPriceUpper(purchasePrice, rng),
  };
}

/** The text a product is indexed under: Title, Description, first bullet and its options. */
export function webShopSearchText(product: WebShopProduct): string {
  const optionText = Object.entries(product.options)
    .map(([name, values]) => `${name} ${values.join(" ")}`)
    .join(" ");
  return [product.Title, product.Description, product.BulletPoints[0] ?? "", optionText]
    .join(" ")
    .toLowerCase();
}

/**
 * Generate the products of a catalog (deterministic in `catalogSeed`). The first k products of a
 * larger catalog are those of the k-product catalog, as the original's small set is a prefix.
 */
export function generateWebShopProducts(catalogSeed: number, numProducts: number): WebShopProduct[] {
  const rng = new Rng(catalogSeed, "webshop-catalog");
  const drafts: Draft[] = [];
  const products: WebShopProduct[] = [];
  const used = new Set<string>();
  for (let i = 0; i < numProducts; i++) {
    const draft = i > 0 && rng.bool(0.4) ? nearMissDraft(rng, drafts[rng.int(i)]!) : freshDraft(rng);
    drafts.push(draft);
    products.push(writeProduct(rng, draft, drawAsin(rng, used)));
  }
  return products;
}

/** Build a catalog: products, search index and goals. Prefer `loadWebShopCatalog`, which caches. */
export function buildWebShopCatalog(catalogSeed: number, numProducts: number): WebShopCatalog {
  if (!Number.isInteger(numProducts) || numProducts < 1) {
    throw new RangeError(`numProducts must be a positive integer, got ${numProducts}`);
  }
  const products = generateWebShopProducts(catalogSeed, numProducts);
  const index = new WebShopSearchIndex(products.map((p) => ({ id: p.asin, text: webShopSearchText(p) })));
  return {
    catalogSeed,
    products,
    byAsin: new Map(products.map((p) => [p.asin, p])),
    index,
    goals: buildWebShopGoals(products, catalogSeed),
  };
}

const CACHE_LIMIT = 8;
const cache = new Map<string, WebShopCatalog>();

/** The catalog for (catalogSeed, numProducts), built once and shared by every env that uses it. */
export function loadWebShopCatalog(catalogSeed: number, numProducts: number): WebShopCatalog {
  const key = `${catalogSeed}:${numProducts}`;
  let catalog = cache.get(key);
  if (catalog) {
    // Refresh its place, so the least recently used catalog is the one dropped.
    cache.delete(key);
  } else {
    catalog = buildWebShopCatalog(catalogSeed, numProducts);
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  }
  cache.set(key, catalog);
  return catalog;
}
