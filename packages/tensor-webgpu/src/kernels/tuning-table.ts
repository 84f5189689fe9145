/**
 * A context's measurements of one kind of kernel choice (matmul kernels, attention tiles, attention
 * forms): the measured entries by problem group, and one problem of each group met but not yet measured,
 * kept for the next tuning pass.
 */
export class TuningTable<Problem, Entry extends { key: string }> {
  private readonly tuned = new Map<string, Entry>();
  private readonly pending = new Map<string, Problem>();

  /** The measured entry of group `key`; an unmeasured group is noted with its first problem met. */
  protected find(key: string, problem: () => Problem): Entry | undefined {
    const entry = this.tuned.get(key);
    if (!entry && !this.pending.has(key)) this.pending.set(key, problem());
    return entry;
  }

  /** The measured entry of group `key`, noting nothing. */
  protected measured(key: string): Entry | undefined {
    return this.tuned.get(key);
  }

  /** One problem of each group met but not yet measured, in the order first met. */
  protected pendingProblemList(): Problem[] {
    return [...this.pending.values()];
  }

  set(entry: Entry): void {
    this.tuned.set(entry.key, entry);
    this.pending.delete(entry.key);
  }

  get size(): number {
    return this.tuned.size;
  }

  entries(): Entry[] {
    return [...this.tuned.values()];
  }
}
