const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/**
 * Escapes a value for HTML element content and quoted attributes. Every value put into the report goes
 * through this, numbers too: a hand-edited trajectories.jsonl can hold text where a number belongs.
 */
export function escapeHtml(text: string | number): string {
  return String(text).replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/**
 * An SVG document as an <img> data URL. Inside <img>, SVG cannot run scripts or load anything, so a
 * state render is shown inert even if it carried hostile text.
 */
export function svgImage(svg: string, alt: string, className = "state"): string {
  const bytes = new TextEncoder().encode(svg);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return `<img class="${escapeHtml(className)}" alt="${escapeHtml(alt)}" src="data:image/svg+xml;base64,${btoa(binary)}">`;
}

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return Number.isInteger(value) ? String(value) : value.toFixed(Math.abs(value) >= 100 ? 1 : 3);
}
