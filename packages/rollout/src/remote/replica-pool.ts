/**
 * Inference servers that serve the same model, and which one takes the next request: an episode's own
 * replica while it is up (its prefix cache holds the episode's history), else the healthy one with the
 * fewest requests in flight. A replica that fails is taken out of routing and probed (`GET /health`)
 * until it answers again; each has a cap on requests in flight, and a request waits for a free slot.
 */
import { requestText } from "../http.js";
import { RemotePolicyError } from "./errors.js";

export interface ReplicaPoolOptions {
  /** The servers' roots, e.g. "http://10.0.0.5:8000" (no /v1): health and API paths hang off them. */
  urls: readonly string[];
  /** Requests in flight at once on one replica (default 16); more wait for a slot. */
  maxConcurrentPerReplica?: number;
  /** The path that answers 200 while the server can serve (default "/health", as vLLM and SGLang). */
  healthPath?: string;
  /** One health probe's deadline (default 5 s). */
  healthTimeoutMs?: number;
  /** How often replicas that are down are probed (default 2 s). */
  probeIntervalMs?: number;
  apiKey?: string;
  fetch?: typeof fetch;
}

/** A replica as routing sees it (a copy). */
export interface ReplicaStatus {
  url: string;
  healthy: boolean;
  /** Requests in flight. */
  outstanding: number;
  /** Requests routed to it so far. */
  routed: number;
  /** Why it was last taken out of routing. */
  lastError?: string;
}

/** A slot on a replica, held for one request. */
export interface ReplicaLease {
  readonly url: string;
  /** Frees the slot (a second call does nothing). */
  release(): void;
}

interface Replica {
  url: string;
  healthy: boolean;
  outstanding: number;
  routed: number;
  lastError?: string;
}

export class ReplicaPool {
  private readonly replicas: Replica[];
  private readonly limit: number;
  /** Episode id -> the replica its turns go to. */
  private readonly episodes = new Map<string, Replica>();
  private waiters: (() => void)[] = [];
  private probeTimer: ReturnType<typeof setInterval> | undefined;
  private probing: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: ReplicaPoolOptions) {
    if (options.urls.length === 0) throw new RangeError("ReplicaPool: give at least one server URL");
    const urls = options.urls.map((url) => url.replace(/\/+$/, ""));
    const repeated = urls.filter((url, i) => urls.indexOf(url) !== i);
    if (repeated.length > 0) throw new RangeError(`ReplicaPool: ${repeated[0]} is listed twice`);
    this.limit = options.maxConcurrentPerReplica ?? 16;
    if (!Number.isInteger(this.limit) || this.limit < 1)
      throw new RangeError(
        `ReplicaPool: maxConcurrentPerReplica must be a positive integer, got ${this.limit}`,
      );
    this.replicas = urls.map((url) => ({ url, healthy: true, outstanding: 0, routed: 0 }));
  }

  get urls(): string[] {
    return this.replicas.map((replica) => replica.url);
  }

  status(): ReplicaStatus[] {
    return this.replicas.map((replica) => ({ ...replica }));
  }

  /** The replica an episode's turns go to, if it has one. */
  episodeReplica(episodeId: string): string | undefined {
    return this.episodes.get(episodeId)?.url;
  }

  /**
   * A slot on the replica routing picks for `episodeId`, waiting while every candidate is full.
   * `avoid`: replicas this request already failed on, passed over while another is healthy.
   * Throws a retryable RemotePolicyError when no replica is healthy, even after probing them.
   */
  async acquire(
    options: { episodeId?: string; avoid?: ReadonlySet<string>; signal?: AbortSignal } = {},
  ): Promise<ReplicaLease> {
    const { episodeId, avoid, signal } = options;
    for (;;) {
      if (signal?.aborted)
        throw new RemotePolicyError("cancelled while waiting for a replica", undefined, false);
      if (this.closed) throw new RemotePolicyError("the replica pool is closed", undefined, false);
      let healthy = this.replicas.filter((replica) => replica.healthy);
      if (healthy.length === 0) {
        // Every replica failed lately: ask them now rather than wait for the next scheduled probe.
        await this.probeDown();
        healthy = this.replicas.filter((replica) => replica.healthy);
        if (healthy.length === 0)
          throw new RemotePolicyError(
            `no replica is healthy: ${this.replicas.map((r) => `${r.url} (${r.lastError ?? "down"})`).join(", ")}`,
            undefined,
            true,
          );
      }
      const fresh = healthy.filter((replica) => !avoid?.has(replica.url));
      const candidates = fresh.length > 0 ? fresh : healthy;
      const sticky = episodeId === undefined ? undefined : this.episodes.get(episodeId);
      let target: Replica | undefined;
      if (sticky && candidates.includes(sticky)) {
        // Wait for the episode's own replica rather than move it: its cache holds the history.
        if (sticky.outstanding < this.limit) target = sticky;
      } else {
        for (const replica of candidates) {
          if (replica.outstanding >= this.limit) continue;
          if (
            !target ||
            replica.outstanding < target.outstanding ||
            (replica.outstanding === target.outstanding && replica.routed < target.routed)
          )
            target = replica;
        }
      }
      if (!target) {
        await this.changed(signal);
        continue;
      }
      if (episodeId !== undefined) this.episodes.set(episodeId, target);
      target.outstanding++;
      target.routed++;
      return this.lease(target);
    }
  }

  /** Takes a replica out of routing until a health probe succeeds; its episodes move on their next turn. */
  markDown(url: string, reason: string): void {
    const replica = this.find(url);
    if (!replica) return;
    replica.lastError = reason;
    if (!replica.healthy) return;
    replica.healthy = false;
    this.startProbing();
    this.notify();
  }

  /** Probes every replica now: those that answer are in routing, the others out. */
  async checkHealth(): Promise<ReplicaStatus[]> {
    await Promise.all(this.replicas.map((replica) => this.probe(replica)));
    return this.status();
  }

  /** Forgets which replica each episode used (e.g. at a rollout's end). */
  forgetEpisodes(): void {
    this.episodes.clear();
  }

  /** Stops probing; pending and later acquires fail. */
  close(): void {
    this.closed = true;
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.notify();
  }

  private find(url: string): Replica | undefined {
    const root = url.replace(/\/+$/, "");
    return this.replicas.find((replica) => replica.url === root);
  }

  private lease(replica: Replica): ReplicaLease {
    let held = true;
    return {
      url: replica.url,
      release: () => {
        if (!held) return;
        held = false;
        replica.outstanding--;
        this.notify();
      },
    };
  }

  private startProbing(): void {
    if (this.probeTimer || this.closed) return;
    this.probeTimer = setInterval(() => {
      void this.probeDown();
    }, this.options.probeIntervalMs ?? 2000);
    // Probing alone never keeps a process alive.
    (this.probeTimer as { unref?: () => void }).unref?.();
  }

  /** Probes the replicas that are down (one round at a time); stops the timer once all are back. */
  private probeDown(): Promise<void> {
    this.probing ??= (async () => {
      try {
        await Promise.all(this.replicas.filter((r) => !r.healthy).map((replica) => this.probe(replica)));
      } finally {
        this.probing = undefined;
      }
      if (this.replicas.every((replica) => replica.healthy) && this.probeTimer) {
        clearInterval(this.probeTimer);
        this.probeTimer = undefined;
      }
    })();
    return this.probing;
  }

  private async probe(replica: Replica): Promise<void> {
    let reason: string | undefined;
    try {
      const response = await requestText({
        method: "GET",
        url: `${replica.url}${this.options.healthPath ?? "/health"}`,
        timeoutMs: this.options.healthTimeoutMs ?? 5000,
        maxResponseBytes: 64 * 1024,
        ...(this.options.apiKey ? { apiKey: this.options.apiKey } : {}),
        ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
      });
      if (!response.ok) reason = `health check answered HTTP ${response.status}`;
    } catch (error) {
      reason = (error as Error).message;
    }
    if (reason === undefined) {
      if (!replica.healthy) {
        replica.healthy = true;
        this.notify();
      }
    } else {
      replica.lastError = reason;
      if (replica.healthy) {
        replica.healthy = false;
        this.startProbing();
        this.notify();
      }
    }
  }

  /** Resolves at the next release, health change or close (or when `signal` aborts). */
  private changed(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.push(done);
      signal?.addEventListener("abort", done);
    });
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
