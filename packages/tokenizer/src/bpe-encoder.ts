import { BytePairEncodingCore } from "gpt-tokenizer/BytePairEncodingCore";
import { ExactRankMerge } from "./exact-rank-merge.js";
import type { RankTable } from "./rank-table.js";

export type { RankTable } from "./rank-table.js";

export interface BpeEncoderOptions {
  ranks: RankTable;
  /** Token id of each rank, when ids are not ranks; null when rank = id. */
  rankToId: Int32Array | null;
  /** Global Unicode RegExp that cuts text into pre-tokens (it must match every character). */
  splitPattern: RegExp;
}

const BYTE_ORDER_MARK = "\uFEFF";

/**
 * Byte-level BPE over gpt-tokenizer's BytePairEncodingCore, the fast path for all text.
 *
 * The core looks byte sequences up by decoding them with a TextDecoder that strips a leading
 * U+FEFF, so a piece starting with the bytes EF BB BF would take the rank of the rest ("\uFEFF\n"
 * would become "\n"). Pieces containing U+FEFF are merged by ExactRankMerge instead.
 */
export class BpeEncoder {
  private readonly core: BytePairEncodingCore;
  private readonly exact: ExactRankMerge;
  private readonly rankToId: Int32Array | null;
  private readonly splitPattern: RegExp;
  private readonly stickySplitPattern: RegExp;

  constructor({ ranks, rankToId, splitPattern }: BpeEncoderOptions) {
    this.rankToId = rankToId;
    this.splitPattern = new RegExp(splitPattern.source, "gu");
    this.stickySplitPattern = new RegExp(splitPattern.source, "uy");
    // The core's types want a dense table; it skips holes itself (forEach and Object.keys do).
    this.core = new BytePairEncodingCore({
      bytePairRankDecoder: ranks as readonly (string | readonly number[])[],
      tokenSplitRegex: this.splitPattern,
    });
    this.exact = new ExactRankMerge(ranks);
  }

  /** Appends the ids of `text` (already normalized, without added tokens) to `out`. */
  encodeInto(text: string, out: number[]): void {
    const ranks = text.includes(BYTE_ORDER_MARK)
      ? this.encodePieceByPiece(text)
      : this.core.encodeNative(text);
    const rankToId = this.rankToId;
    if (rankToId === null) {
      for (const rank of ranks) out.push(rank);
    } else {
      for (const rank of ranks) out.push(rankToId[rank]!);
    }
  }

  private encodePieceByPiece(text: string): number[] {
    const ranks: number[] = [];
    for (const [piece] of text.matchAll(this.splitPattern)) {
      // The core re-splits what it is given: use it only for pieces that stay whole.
      const pieceRanks =
        !piece.includes(BYTE_ORDER_MARK) && this.isSinglePiece(piece)
          ? this.core.encodeNative(piece)
          : this.exact.merge(piece);
      for (const rank of pieceRanks) ranks.push(rank);
    }
    return ranks;
  }

  private isSinglePiece(piece: string): boolean {
    this.stickySplitPattern.lastIndex = 0;
    return this.stickySplitPattern.exec(piece)?.[0].length === piece.length;
  }
}
