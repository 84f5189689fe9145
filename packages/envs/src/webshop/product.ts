/** The product record WebShop's pages and goals are built from. */
import type { WebShopAttributeKind } from "./lexicon.js";

/** A product record with the original's field names (Title, BulletPoints, product_category, ...). */
export interface WebShopProduct {
  /** "B0" + 8 uppercase letters or digits. */
  asin: string;
  Title: string;
  Description: string;
  BulletPoints: string[];
  /** The scrape query (lowercase); shared by the products of one leaf. */
  query: string;
  /** Short category name ("fashion", "beauty", ...). */
  category: string;
  /** Breadcrumb "Top › Second › Third". */
  product_category: string;
  /** Lowercase attribute phrases. */
  Attributes: string[];
  /** Option name -> offered values (lowercase), in display order. */
  options: Record<string, string[]>;
  /** [p] or [lo, hi], in dollars. */
  pricing: number[];
  /** The price tag as shown: "$12.99" or "$12.99 to $18.49". */
  Price: string;
  Rating: "N.A.";
  /** The price paid at Buy Now, fixed once: p, or uniform(lo, hi) rounded to cents. */
  purchasePrice: number;
  /** The nouns of the title (by construction: the words of its product-type phrase). */
  titleNouns: string[];
  brand: string;
  /** The product-type phrase ("polo shirt"). */
  noun: string;
  /** Who it is for ("for men"), or "". */
  audience: string;
  /** How each attribute reads in an instruction. */
  attributeKinds: Record<string, WebShopAttributeKind>;
  /** The attributes its goals ask for (a subset of Attributes, fixed per product as in WebShop). */
  instructionAttributes: string[];
  /** Its goals' price cap (1e6 = no cap). */
  priceUpper: number;
}
