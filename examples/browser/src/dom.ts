/** A small element builder: the page is plain DOM, no framework. */

type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<Record<string, string | boolean | ((event: Event) => void)>> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(key.replace(/^on/, "").toLowerCase(), value);
    else if (value === true) element.setAttribute(key, "");
    else element.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child);
  }
  return element;
}

/** An env's SVG render (made by @ragen/envs, which escapes every text it draws) as a DOM node. */
export function svgNode(svg: string, label: string): HTMLElement {
  const holder = h("div", { class: "svg-state", role: "img", "aria-label": label });
  holder.innerHTML = svg;
  return holder;
}
