/**
 * The CPU half of the embedding's deterministic backward: grouping token positions by id (the ids are on
 * the CPU already), so that the kernel (kernels/embedding.ts) sums each id's rows in a fixed order.
 */

/**
 * The token positions of each distinct id, for a deterministic scatter-add without atomics: the ids in
 * ascending order, and for the u-th one its positions positions[offsets[u] .. offsets[u+1]) in ascending
 * order. Negative ids, and ids >= vocab when `vocab` is given, are left out (their rows of the forward
 * output were zeros, so they get no gradient).
 */
export function groupTokenPositions(
  ids: Int32Array,
  vocab?: number,
): { uniqueIds: Int32Array; offsets: Int32Array; positions: Int32Array } {
  const byId = new Map<number, number[]>();
  ids.forEach((id, position) => {
    if (id < 0 || (vocab !== undefined && id >= vocab)) return;
    let list = byId.get(id);
    if (!list) {
      list = [];
      byId.set(id, list);
    }
    list.push(position);
  });
  const uniqueIds = Int32Array.from(byId.keys()).sort();
  const offsets = new Int32Array(uniqueIds.length + 1);
  const positions = new Int32Array(ids.length);
  let filled = 0;
  uniqueIds.forEach((id, u) => {
    for (const position of byId.get(id)!) positions[filled++] = position;
    offsets[u + 1] = filled;
  });
  return { uniqueIds, offsets, positions: positions.slice(0, filled) };
}
