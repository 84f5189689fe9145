/**
 * A checkpoint (a Hugging Face folder served as static files) fetched into a Qwen2Model on a WebGPU
 * backend and a Tokenizer, through the packages' in-memory loaders — the same parsing and checks as
 * `loadQwen2` and `loadTokenizer` do on files in Node.
 */
import {
  parseQwen2Config,
  parseSafetensors,
  type Qwen2Config,
  Qwen2Model,
  readQwen2Weights,
} from "@ragen/models";
import type { Backend } from "@ragen/tensor-webgpu";
import { Tokenizer } from "@ragen/tokenizer";

export interface LoadedCheckpoint {
  model: Qwen2Model;
  config: Qwen2Config;
  tokenizer: Tokenizer;
  /** Bytes fetched (all four files). */
  bytes: number;
}

/** A checkpoint file could not be fetched or read; the message names its URL. */
export class CheckpointLoadError extends Error {
  override readonly name = "CheckpointLoadError";
  constructor(
    readonly url: string,
    problem: string,
  ) {
    super(`${url}: ${problem}`);
  }
}

async function fetchFile(url: URL): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw new CheckpointLoadError(url.href, `could not be fetched (${(error as Error).message})`);
  }
  if (!response.ok) throw new CheckpointLoadError(url.href, `HTTP ${response.status} ${response.statusText}`);
  return response;
}

/** `folderUrl` ends with "/" (e.g. new URL("models/frozenlake/", document.baseURI)). */
export async function loadCheckpoint(folderUrl: URL, backend: Backend): Promise<LoadedCheckpoint> {
  const url = (name: string) => new URL(name, folderUrl);
  const [configText, weightBytes, tokenizerText, tokenizerConfigText] = await Promise.all([
    fetchFile(url("config.json")).then((r) => r.text()),
    fetchFile(url("model.safetensors")).then(async (r) => new Uint8Array(await r.arrayBuffer())),
    fetchFile(url("tokenizer.json")).then((r) => r.text()),
    fetchFile(url("tokenizer_config.json")).then((r) => r.text()),
  ]);
  const config = parseQwen2Config(configText, { fileName: url("config.json").href });
  const weights = parseSafetensors(weightBytes, { fileName: url("model.safetensors").href });
  const tokenizer = Tokenizer.fromFiles(tokenizerText, tokenizerConfigText);
  if (tokenizer.imEndId === undefined)
    throw new CheckpointLoadError(
      url("tokenizer.json").href,
      "the tokenizer has no <|im_end|> token, so responses could never end",
    );
  const model = Qwen2Model.fromWeights(config, readQwen2Weights({ config, weights }), backend);
  const bytes =
    configText.length + weightBytes.byteLength + tokenizerText.length + tokenizerConfigText.length;
  return { model, config, tokenizer, bytes };
}
