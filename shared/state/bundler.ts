// Coalesces concurrent work for the same queue key inside one instance: one transaction at a time per (key, windows),
// taking everything that arrived meanwhile as one bundle (Beam's bundles; fewer Firestore writes per event).

interface Waiting<Item, Result> {
  readonly item: Item;
  readonly resolve: (result: Result) => void;
  readonly reject: (error: unknown) => void;
}

interface Queue<Item, Result> {
  readonly waiting: Waiting<Item, Result>[];
  running: boolean;
}

/**
 * Runs `process` for bundles of items with the same queue key, one bundle at a time per key, in arrival order.
 * An item submitted while its key's bundle is running joins the next one (at most `maxBundle` items). Each
 * `submit` resolves with its own result, or rejects with the bundle's error; nothing is dropped.
 */
export class Bundler<Item, Result> {
  private readonly queues = new Map<string, Queue<Item, Result>>();

  /**
   * @param process applies one bundle and returns one result per item, in order
   * @param maxBundle items per bundle (>= 1)
   * @param lingerMs how long a bundle of fewer than `maxBundle` items waits for more before it starts, ms (0: none)
   */
  constructor(
    private readonly process: (
      queueKey: string,
      items: readonly Item[],
    ) => Promise<readonly Result[]>,
    private readonly maxBundle: number,
    private readonly lingerMs = 0,
  ) {
    if (!Number.isSafeInteger(maxBundle) || maxBundle < 1) {
      throw new RangeError(`maxBundle must be an integer >= 1, got ${maxBundle}`);
    }
  }

  /** Queues `item` under `queueKey`; resolves with its result once its bundle is done. */
  submit(queueKey: string, item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      let queue = this.queues.get(queueKey);
      if (queue === undefined) {
        queue = { waiting: [], running: false };
        this.queues.set(queueKey, queue);
      }
      queue.waiting.push({ item, resolve, reject });
      if (!queue.running) void this.drain(queueKey, queue);
    });
  }

  /** Items waiting or running, over all keys (for tests and metrics). */
  get pending(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.waiting.length;
    return n;
  }

  /** Never rejects: a bundle's failure is delivered to each of its submitters. */
  private async drain(queueKey: string, queue: Queue<Item, Result>): Promise<void> {
    queue.running = true;
    while (queue.waiting.length > 0) {
      if (this.lingerMs > 0 && queue.waiting.length < this.maxBundle) {
        await new Promise((resolve) => setTimeout(resolve, this.lingerMs));
      }
      const bundle = queue.waiting.splice(0, this.maxBundle);
      try {
        const results = await this.process(
          queueKey,
          bundle.map((w) => w.item),
        );
        if (results.length !== bundle.length) {
          throw new Error(`bundle of ${bundle.length} items produced ${results.length} results`);
        }
        bundle.forEach((w, i) => w.resolve(results[i] as Result));
      } catch (err) {
        for (const w of bundle) w.reject(err);
      }
    }
    queue.running = false;
    this.queues.delete(queueKey);
  }
}
