/** What goes wrong between a remote policy and its inference servers, each naming the replica. */

export class RemotePolicyError extends Error {
  override readonly name: string = "RemotePolicyError";
  constructor(
    message: string,
    /** HTTP status, when the server answered. */
    readonly status: number | undefined,
    /** Whether another try (on this or another replica) may succeed. */
    readonly retryable: boolean,
    /** The replica's URL, when one was involved. */
    readonly replica?: string,
  ) {
    super(message);
  }
}

/** A request named an adapter (a LoRA `model` name or `lora_path`) the replica does not have loaded. */
export class UnknownAdapterError extends RemotePolicyError {
  override readonly name = "UnknownAdapterError";
  constructor(
    readonly adapter: string,
    replica: string,
    status: number,
    said: string,
  ) {
    super(
      `${replica} does not serve the adapter "${adapter}" (HTTP ${status}: ${said})`,
      status,
      false,
      replica,
    );
  }
}

/** Loading, checking or unloading an adapter on a replica failed. */
export class AdapterPublishError extends Error {
  override readonly name = "AdapterPublishError";
  constructor(
    message: string,
    readonly adapter: string,
    readonly replica: string,
    readonly status?: number,
  ) {
    super(message);
  }
}
