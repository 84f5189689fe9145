/** Small helpers that turn env states into standalone SVG documents (for reports and web pages). */

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/** How one kind of grid cell is drawn. */
export interface CellStyle {
  /** Background fill. */
  fill: string;
  /** A glyph drawn in the middle of the cell (emoji or letter), optional. */
  glyph?: string;
  /** Glyph colour. */
  glyphColor?: string;
  /** Accessible name, written as the cell's <title>. */
  label: string;
}

export interface GridSvgOptions {
  cellSize?: number;
  /** Caption under the grid. */
  caption?: string;
}

/** Draw a grid whose cells are keys into `styles`. */
export function gridSvg(
  cells: readonly (readonly string[])[],
  styles: Record<string, CellStyle>,
  options: GridSvgOptions = {},
): string {
  const size = options.cellSize ?? 48;
  const rows = cells.length;
  // A loop rather than spreading into Math.max, which overflows the stack on very many rows.
  let cols = 0;
  for (const row of cells) cols = Math.max(cols, row.length);
  const captionHeight = options.caption ? 28 : 0;
  // Wide enough for the caption too (about 0.6 em per character at 14px), so it is never clipped.
  const captionWidth = options.caption ? Math.ceil(8 + options.caption.length * 8.4) : 0;
  const width = Math.max(cols * size, captionWidth);
  const height = rows * size + captionHeight;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
  ];
  cells.forEach((row, r) => {
    row.forEach((key, c) => {
      const style = styles[key];
      if (!style) throw new Error(`gridSvg: no style for cell "${key}"`);
      const x = c * size;
      const y = r * size;
      parts.push(
        `<g><title>${escapeXml(style.label)}</title><rect x="${x}" y="${y}" width="${size}" height="${size}" fill="${style.fill}" stroke="#444" stroke-width="1"/>`,
      );
      if (style.glyph) {
        parts.push(
          `<text x="${x + size / 2}" y="${y + size / 2}" font-size="${Math.round(size * 0.55)}" text-anchor="middle" dominant-baseline="central" fill="${style.glyphColor ?? "#000"}">${escapeXml(style.glyph)}</text>`,
        );
      }
      parts.push("</g>");
    });
  });
  if (options.caption) {
    parts.push(
      `<text x="4" y="${rows * size + 19}" font-size="14" fill="#222">${escapeXml(options.caption)}</text>`,
    );
  }
  parts.push("</svg>");
  return parts.join("");
}

export interface TextPanelOptions {
  width?: number;
  /** Characters per line before wrapping. */
  wrap?: number;
  title?: string;
}

/** Draw lines of text in a panel (for envs whose state is text: Bandit, Countdown, WebShop). */
export function textPanelSvg(lines: readonly string[], options: TextPanelOptions = {}): string {
  const width = options.width ?? 640;
  const wrap = options.wrap ?? Math.floor(width / 7.4);
  const wrapped = lines.flatMap((line) => wrapLine(line, wrap));
  const lineHeight = 18;
  const top = options.title ? 34 : 12;
  const height = top + wrapped.length * lineHeight + 12;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="monospace">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#fbfbf8" stroke="#999"/>`,
  ];
  if (options.title) {
    parts.push(
      `<text x="10" y="22" font-size="15" font-weight="bold" font-family="sans-serif">${escapeXml(options.title)}</text>`,
    );
  }
  wrapped.forEach((line, i) => {
    parts.push(
      `<text x="10" y="${top + (i + 1) * lineHeight - 4}" font-size="13" xml:space="preserve">${escapeXml(line)}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("");
}

function wrapLine(line: string, width: number): string[] {
  if (line.length <= width) return [line];
  const out: string[] = [];
  let current = "";
  for (const word of line.split(" ")) {
    if (current.length > 0 && current.length + 1 + word.length > width) {
      out.push(current);
      current = word;
    } else {
      current = current.length > 0 ? `${current} ${word}` : word;
    }
    while (current.length > width) {
      out.push(current.slice(0, width));
      current = current.slice(width);
    }
  }
  if (current.length > 0) out.push(current);
  return out;
}
