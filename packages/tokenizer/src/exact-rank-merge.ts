import type { RankTable } from "./rank-table.js";

/** Bytes as a Latin-1 string: a compact, exact map key. */
function bytesKey(bytes: ArrayLike<number>): string {
  let key = "";
  for (let i = 0; i < bytes.length; i++) key += String.fromCharCode(bytes[i]!);
  return key;
}

/**
 * The core's algorithm (look the whole piece up, else repeatedly join the adjacent pair whose
 * concatenation has the lowest rank, leftmost first) with byte sequences looked up exactly.
 * Quadratic in the piece length, which is fine for the rare pieces that need it.
 */
export class ExactRankMerge {
  private rankByBytes: Map<string, number> | null = null;
  private readonly utf8 = new TextEncoder();

  constructor(private readonly ranks: RankTable) {}

  /** The ranks of one pre-token. */
  merge(piece: string): number[] {
    const table = this.table();
    const bytes = this.utf8.encode(piece);
    const rankOf = (start: number, end: number) => table.get(bytesKey(bytes.subarray(start, end)));
    const whole = rankOf(0, bytes.length);
    if (whole !== undefined) return [whole];

    // bounds[i] is where the i-th part starts; the last entry is the end of the piece.
    const bounds = Array.from({ length: bytes.length + 1 }, (_, i) => i);
    while (bounds.length > 2) {
      let best = Number.POSITIVE_INFINITY;
      let bestIndex = -1;
      for (let i = 0; i + 2 < bounds.length; i++) {
        const rank = rankOf(bounds[i]!, bounds[i + 2]!) ?? Number.POSITIVE_INFINITY;
        if (rank < best) {
          best = rank;
          bestIndex = i;
        }
      }
      if (bestIndex < 0) break;
      bounds.splice(bestIndex + 1, 1);
    }
    const ranks: number[] = [];
    for (let i = 0; i + 1 < bounds.length; i++) {
      const rank = rankOf(bounds[i]!, bounds[i + 1]!);
      // Unreachable with a byte-level vocabulary (every single byte is a token).
      if (rank === undefined)
        throw new Error(`no token for the bytes ${bytes.subarray(bounds[i]!, bounds[i + 1]!)}`);
      ranks.push(rank);
    }
    return ranks;
  }

  /** Rank of every token keyed by its bytes; built on first use. */
  private table(): Map<string, number> {
    if (this.rankByBytes === null) {
      const table = new Map<string, number>();
      this.ranks.forEach((token, rank) => {
        if (token === undefined) return;
        table.set(bytesKey(typeof token === "string" ? this.utf8.encode(token) : token), rank);
      });
      this.rankByBytes = table;
    }
    return this.rankByBytes;
  }
}
