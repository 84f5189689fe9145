/**
 * Puts LoRA adapters the trainer wrote (PEFT layout: adapter_config.json + adapter_model.safetensors)
 * onto running inference servers, version by version, and takes stale versions off again.
 *
 * vLLM (started with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora): `POST
 * /v1/load_lora_adapter` and `/v1/unload_lora_adapter`. SGLang (--enable-lora with --max-lora-rank and
 * --lora-target-modules): `POST /load_lora_adapter` and `/unload_lora_adapter`. Both take
 * `{lora_name, lora_path}` (unload: `{lora_name}`) and list loaded adapters in `GET /v1/models`, which a
 * publish reads back to confirm. These endpoints change what a server runs: keep them on private networks.
 */
import { errorBodyMessage, HttpRequestFailure, requestText } from "../http.js";
import { AdapterPublishError } from "./errors.js";

export type AdapterServerKind = "vllm" | "sglang";

/** Where and what one replica loads. */
export interface AdapterPlacement {
  /** The adapter's served name, `${name}@${version}`. */
  adapter: string;
  name: string;
  version: number;
  /** The folder the trainer wrote, on this machine. */
  localPath: string;
  replica: string;
  /** The replica's place in `replicas`. */
  index: number;
}

export interface AdapterPublisherOptions {
  /** The servers' roots, e.g. "http://10.0.0.5:8000". */
  replicas: readonly string[];
  server: AdapterServerKind;
  /**
   * The folder each replica reads: a template over {name}, {version}, {adapter}, {localPath}, {replica},
   * {index} (e.g. "/mnt/shared/adapters/{adapter}"), or a function of the placement. Default
   * "{localPath}": the servers see the trainer's disk (shared storage).
   */
  remotePath?: string | ((placement: AdapterPlacement) => string);
  /** Runs before a replica loads the adapter: copies the folder to where `remotePath` points, for storage that is not shared. */
  copy?: (placement: AdapterPlacement & { remotePath: string }) => Promise<void>;
  /** Versions kept loaded besides the newest (default 1): publishing v unloads versions before v - k. */
  keepStale?: number;
  apiKey?: string;
  /** Per request (default 120 s: loading reads the weights). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const PATHS: Record<AdapterServerKind, { load: string; unload: string; models: string }> = {
  vllm: { load: "/v1/load_lora_adapter", unload: "/v1/unload_lora_adapter", models: "/v1/models" },
  sglang: { load: "/load_lora_adapter", unload: "/unload_lora_adapter", models: "/v1/models" },
};

export class AdapterPublisher {
  private readonly replicas: string[];
  /** Adapter name -> its versions loaded on the replicas, oldest first. */
  private readonly versions = new Map<string, number[]>();

  constructor(private readonly options: AdapterPublisherOptions) {
    if (options.replicas.length === 0) throw new RangeError("AdapterPublisher: give at least one server URL");
    this.replicas = options.replicas.map((url) => url.replace(/\/+$/, ""));
    const keep = options.keepStale ?? 1;
    if (!Number.isInteger(keep) || keep < 0)
      throw new RangeError(`AdapterPublisher: keepStale must be a non-negative integer, got ${keep}`);
  }

  /** The served adapter names this publisher loaded and has not unloaded, oldest first per name. */
  loaded(): string[] {
    return [...this.versions].flatMap(([name, versions]) => versions.map((v) => adapterId(name, v)));
  }

  /**
   * Loads `localPath` as `${name}@${version}` on every replica and checks each lists it; then unloads
   * that name's versions older than the newest keepStale + 1. Returns the served name, which a
   * policy's `useAdapter` takes. Throws AdapterPublishError naming the replica and the adapter.
   */
  async publish(name: string, version: number, localPath: string): Promise<string> {
    if (!Number.isInteger(version) || version < 0)
      throw new RangeError(`AdapterPublisher: version must be a non-negative integer, got ${version}`);
    if (name.length === 0 || name.includes("@"))
      throw new RangeError(`AdapterPublisher: name must be non-empty and without "@", got "${name}"`);
    const adapter = adapterId(name, version);
    await Promise.all(
      this.replicas.map((replica, index) =>
        this.loadOn({ adapter, name, version, localPath, replica, index }),
      ),
    );
    const versions = (this.versions.get(name) ?? []).filter((v) => v !== version);
    versions.push(version);
    versions.sort((a, b) => a - b);
    this.versions.set(name, versions);
    const keep = (this.options.keepStale ?? 1) + 1;
    for (const stale of versions.slice(0, Math.max(0, versions.length - keep))) {
      await this.unload(adapterId(name, stale));
    }
    return adapter;
  }

  /** Unloads `name@version` from every replica; a replica that does not have it counts as done. */
  async unload(adapter: string): Promise<void> {
    const failures: AdapterPublishError[] = [];
    await Promise.all(
      this.replicas.map(async (replica) => {
        try {
          const { status, text } = await this.call(
            replica,
            adapter,
            "POST",
            PATHS[this.options.server].unload,
            {
              lora_name: adapter,
            },
          );
          // Not there (a restarted server, an earlier unload) is what unloading wants.
          if (status === 404 || (status >= 200 && status < 300)) return;
          if (status === 400 && /not (been )?(found|loaded)|does not exist|no (such )?lora/i.test(text))
            return;
          throw new AdapterPublishError(
            `${replica}: unloading adapter "${adapter}" failed with HTTP ${status}: ${errorBodyMessage(text)}`,
            adapter,
            replica,
            status,
          );
        } catch (error) {
          failures.push(error as AdapterPublishError);
        }
      }),
    );
    const [name, version] = splitAdapterId(adapter);
    if (name !== undefined) {
      const left = (this.versions.get(name) ?? []).filter((v) => v !== version);
      if (left.length > 0) this.versions.set(name, left);
      else this.versions.delete(name);
    }
    if (failures.length > 0) throw failures[0];
  }

  /**
   * Unloads every version of `name` the replicas list in `GET /v1/models`, whoever loaded it: a run that
   * starts again (resumed, or killed and rerun) takes its earlier attempt's versions off, since a load
   * of a name already there is taken as done and would keep the old weights under the new version.
   * Returns the served names found, sorted.
   */
  async unloadAll(name: string): Promise<string[]> {
    const listed = await Promise.all(
      this.replicas.map(async (replica) => {
        const models = await this.call(replica, `${name}@*`, "GET", PATHS[this.options.server].models);
        if (models.status !== 200)
          throw new AdapterPublishError(
            `${replica}: GET ${PATHS[this.options.server].models} failed with HTTP ${models.status}: ${errorBodyMessage(models.text)}`,
            `${name}@*`,
            replica,
            models.status,
          );
        return servedIds(models.text).filter((id) => splitAdapterId(id)[0] === name);
      }),
    );
    const found = [...new Set(listed.flat())].sort();
    for (const adapter of found) await this.unload(adapter);
    return found;
  }

  private async loadOn(placement: AdapterPlacement): Promise<void> {
    const { adapter, replica } = placement;
    const remotePath = this.remotePathOf(placement);
    if (this.options.copy) {
      try {
        await this.options.copy({ ...placement, remotePath });
      } catch (error) {
        throw new AdapterPublishError(
          `${replica}: copying adapter "${adapter}" to ${remotePath} failed: ${(error as Error).message}`,
          adapter,
          replica,
        );
      }
    }
    const paths = PATHS[this.options.server];
    const load = await this.call(replica, adapter, "POST", paths.load, {
      lora_name: adapter,
      lora_path: remotePath,
    });
    // Loading a name twice is refused; a retried publish of the same version finds it already there.
    const already = load.status === 400 && /already/i.test(load.text);
    if ((load.status < 200 || load.status >= 300) && !already)
      throw new AdapterPublishError(
        `${replica}: loading adapter "${adapter}" from ${remotePath} failed with HTTP ${load.status}: ${errorBodyMessage(load.text)}`,
        adapter,
        replica,
        load.status,
      );
    const models = await this.call(replica, adapter, "GET", paths.models);
    if (models.status !== 200 || !servedIds(models.text).includes(adapter))
      throw new AdapterPublishError(
        `${replica}: adapter "${adapter}" was loaded but GET ${paths.models} does not list it (HTTP ${models.status}: ${errorBodyMessage(models.text)})`,
        adapter,
        replica,
        models.status,
      );
  }

  private remotePathOf(placement: AdapterPlacement): string {
    const template = this.options.remotePath ?? "{localPath}";
    if (typeof template === "function") return template(placement);
    const fields: Record<string, string> = {
      name: placement.name,
      version: String(placement.version),
      adapter: placement.adapter,
      localPath: placement.localPath,
      replica: placement.replica,
      index: String(placement.index),
    };
    return template.replace(/\{(\w+)\}/g, (whole, key: string) => fields[key] ?? whole);
  }

  private async call(
    replica: string,
    adapter: string,
    method: "GET" | "POST",
    path: string,
    body?: object,
  ): Promise<{ status: number; text: string }> {
    try {
      const { status, text } = await requestText({
        method,
        url: `${replica}${path}`,
        ...(body ? { body } : {}),
        timeoutMs: this.options.timeoutMs ?? 120_000,
        maxResponseBytes: 1024 * 1024,
        ...(this.options.apiKey ? { apiKey: this.options.apiKey } : {}),
        ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
      });
      return { status, text };
    } catch (error) {
      if (!(error instanceof HttpRequestFailure)) throw error;
      throw new AdapterPublishError(`${replica}: adapter "${adapter}": ${error.message}`, adapter, replica);
    }
  }
}

/** The served name of version `version` of adapter `name`. */
export function adapterId(name: string, version: number): string {
  return `${name}@${version}`;
}

/** The model ids a `GET /v1/models` body lists; none when it is not that shape. */
function servedIds(text: string): string[] {
  try {
    const data = (JSON.parse(text) as { data?: { id?: unknown }[] }).data;
    return Array.isArray(data)
      ? data.map((model) => model?.id).filter((id): id is string => typeof id === "string")
      : [];
  } catch {
    return [];
  }
}

function splitAdapterId(adapter: string): [string | undefined, number] {
  const at = adapter.lastIndexOf("@");
  const version = Number(adapter.slice(at + 1));
  return at > 0 && Number.isInteger(version) ? [adapter.slice(0, at), version] : [undefined, Number.NaN];
}
