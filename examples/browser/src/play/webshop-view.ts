/**
 * WebShop-lite as a small shop page: a search box, result lists, product pages with option buttons.
 * Every control sends the env the action a text agent would write (search[...] / click[...]), and only
 * the clickables the env offers on the current page are enabled.
 */
import { WEBSHOP_BUTTONS as B, type WebShopEnv, type WebShopProduct } from "@ragen/envs";
import { h } from "../dom.js";

export type ActionSink = (action: string) => void;

/** The page the env is on, as DOM. `hinted` is an action to highlight (the oracle's). */
export function webShopView(env: WebShopEnv, act: ActionSink, hinted?: string): HTMLElement {
  const page = env.page;
  const offered = new Set(env.availableActions());
  const button = (clickable: string, label: string, extra = "") => {
    const action = `click[${clickable}]`;
    return h(
      "button",
      {
        type: "button",
        class: `shop-button ${extra} ${hinted === action ? "hinted" : ""}`.trim(),
        "data-action": action,
        disabled: !offered.has(action),
        onclick: () => act(action),
      },
      label,
    );
  };
  const product = (asin: string | null): WebShopProduct | undefined =>
    asin === null ? undefined : env.catalog.byAsin.get(asin);
  const root = h(
    "div",
    { class: "shop", "data-page": page.kind },
    h("div", { class: "shop-instruction" }, h("strong", {}, "Instruction: "), page.instruction),
  );

  switch (page.kind) {
    case "search": {
      const input = h("input", {
        type: "search",
        id: "shop-query",
        placeholder: "keywords, e.g. the kind of product and its attributes",
        "aria-label": "search keywords",
      });
      const hintedQuery = hinted?.match(/^search\[(.*)\]$/)?.[1];
      if (hintedQuery !== undefined) input.value = hintedQuery;
      const form = h(
        "form",
        {
          class: "shop-search",
          onsubmit: (event: Event) => {
            event.preventDefault();
            const query = input.value.trim();
            if (query.length > 0) act(`search[${query}]`);
          },
        },
        input,
        h("button", { type: "submit", class: "shop-button primary" }, "Search"),
      );
      root.append(form);
      break;
    }
    case "results": {
      const perPage = page.resultsPerPage ?? 10;
      const first = (page.page - 1) * perPage;
      const shown = page.hits.slice(first, first + perPage);
      root.append(
        h(
          "div",
          { class: "shop-nav" },
          button(B.backToSearch, "Back to search"),
          button(B.prev, "< Prev"),
          button(B.next, "Next >"),
          h("span", { class: "muted" }, `“${page.query}”: page ${page.page}, ${page.hits.length} results`),
        ),
        h(
          "ol",
          { class: "shop-results", start: String(first + 1) },
          ...shown.map((asin) => {
            const item = product(asin);
            return h(
              "li",
              {},
              button(asin.toLowerCase(), asin, "link"),
              h("span", { class: "shop-title" }, item?.Title ?? ""),
              h("span", { class: "shop-price" }, item?.Price ?? ""),
            );
          }),
        ),
      );
      break;
    }
    case "item":
    case "item-sub": {
      const item = product(page.asin);
      root.append(
        h("div", { class: "shop-nav" }, button(B.backToSearch, "Back to search"), button(B.prev, "< Prev")),
      );
      if (!item) break;
      root.append(
        h("h3", { class: "shop-product" }, item.Title),
        h("div", { class: "muted" }, `${item.asin} · ${item.Price} · rating ${item.Rating}`),
      );
      if (page.kind === "item") {
        for (const [name, values] of Object.entries(item.options)) {
          root.append(
            h(
              "div",
              { class: "shop-options" },
              h("span", { class: "shop-option-name" }, `${name}:`),
              ...values.map((value) =>
                button(value, value, page.options[name] === value ? "option selected" : "option"),
              ),
            ),
          );
        }
        root.append(
          h(
            "div",
            { class: "shop-nav" },
            button(B.description, "Description"),
            button(B.features, "Features"),
            button(B.reviews, "Reviews"),
            button(B.buyNow, "Buy now", "primary"),
          ),
        );
      } else {
        const text =
          page.subPage === "description"
            ? [item.Description]
            : page.subPage === "features"
              ? item.BulletPoints.length > 0
                ? item.BulletPoints
                : ["No features"]
              : ["No reviews found"];
        root.append(h("div", { class: "shop-subpage" }, ...text.map((line) => h("p", {}, line))));
      }
      break;
    }
    case "done":
      root.append(
        h(
          "div",
          { class: "shop-done" },
          "Thank you for shopping with us! Your score (0 to 1): ",
          h("strong", {}, (page.reward ?? 0).toFixed(2)),
        ),
      );
      break;
  }
  return root;
}
