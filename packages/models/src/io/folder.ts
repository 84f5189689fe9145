/**
 * Hugging Face model folders on disk (Node only): config.json, model.safetensors or a sharded
 * checkpoint, tokenizer.json, tokenizer_config.json and generation_config.json, in the layout
 * transformers' from_pretrained loads.
 *
 * Writing is atomic: everything goes to a hidden temporary folder beside the target, is flushed
 * to disk, and only then renamed into place, so a crash leaves either the old checkpoint or the
 * new one, never a mix.
 */
import { randomBytes } from "node:crypto";
import { type FileHandle, mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { formatHuggingFaceJson, parseQwen2Config, type Qwen2Config, serializeQwen2Config } from "./config.js";
import { namedTensorEntries, SafetensorsFile, type TensorReader, tensorByteLength } from "./safetensors.js";
import { type TensorSource, type TensorSources, writeSafetensorsFile } from "./safetensors-writer.js";
import {
  buildShardIndex,
  parseShardIndex,
  SAFETENSORS_INDEX_FILE,
  SAFETENSORS_SINGLE_FILE,
  ShardedSafetensors,
} from "./sharded.js";

export const CONFIG_FILE = "config.json";
export const TOKENIZER_FILE = "tokenizer.json";
export const TOKENIZER_CONFIG_FILE = "tokenizer_config.json";
export const GENERATION_CONFIG_FILE = "generation_config.json";

/** A model folder's content, loaded into memory. */
export interface ModelFolder {
  /** Absolute path of the folder. */
  readonly path: string;
  readonly config: Qwen2Config;
  /** All weights, whether from model.safetensors or from shards. */
  readonly weights: TensorReader;
  /** The safetensors files read, relative to the folder. */
  readonly weightFiles: readonly string[];
  /** Parsed tokenizer.json, when present. */
  readonly tokenizer: unknown;
  readonly tokenizerConfig: Record<string, unknown> | undefined;
  readonly generationConfig: Record<string, unknown> | undefined;
}

/** A folder that is missing, incomplete or holds malformed files; the message names the path. */
export class ModelFolderError extends Error {
  readonly path: string;

  constructor(path: string, problem: string, options?: { cause?: unknown }) {
    super(`${path}: ${problem}`, options);
    this.name = "ModelFolderError";
    this.path = path;
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function readJsonFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new ModelFolderError(path, `cannot be read (${(error as Error).message})`, { cause: error });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ModelFolderError(path, `is not valid JSON (${(error as Error).message})`, { cause: error });
  }
}

async function readOptionalJsonObject(path: string): Promise<Record<string, unknown> | undefined> {
  if (!(await isFile(path))) return undefined;
  const json = await readJsonFile(path);
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ModelFolderError(path, "must hold a JSON object");
  }
  return json as Record<string, unknown>;
}

/** Largest read per call; one readFile() stops at 2 GiB, and single-file checkpoints can be bigger. */
const READ_CHUNK_BYTES = 1 << 30;

/** Reads a whole file into one Uint8Array, in chunks, so files past 2 GiB (up to Node's 4 GiB buffers) work. */
async function readWholeFile(path: string): Promise<Uint8Array> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    const bytes = new Uint8Array(size);
    let offset = 0;
    while (offset < size) {
      const { bytesRead } = await handle.read(
        bytes,
        offset,
        Math.min(READ_CHUNK_BYTES, size - offset),
        offset,
      );
      if (bytesRead === 0) throw new Error(`file shrank while being read (${offset} of ${size} bytes)`);
      offset += bytesRead;
    }
    return bytes;
  } finally {
    await handle.close();
  }
}

async function readSafetensorsFile(path: string): Promise<SafetensorsFile> {
  let bytes: Uint8Array;
  try {
    bytes = await readWholeFile(path);
  } catch (error) {
    throw new ModelFolderError(path, `cannot be read (${(error as Error).message})`, { cause: error });
  }
  return new SafetensorsFile(bytes, { fileName: path });
}

/** What a folder must hold to be loadable; throws a ModelFolderError naming what is missing. */
export async function findWeightFiles(
  folder: string,
): Promise<{ index: string | undefined; files: string[] }> {
  if (await isFile(join(folder, SAFETENSORS_SINGLE_FILE)))
    return { index: undefined, files: [SAFETENSORS_SINGLE_FILE] };
  const indexPath = join(folder, SAFETENSORS_INDEX_FILE);
  if (await isFile(indexPath)) {
    const index = parseShardIndex(await readJsonFile(indexPath), indexPath);
    const missing: string[] = [];
    for (const file of index.shardFiles) if (!(await isFile(join(folder, file)))) missing.push(file);
    if (missing.length > 0) {
      throw new ModelFolderError(
        folder,
        `is missing shard(s) ${missing.join(", ")} listed in ${SAFETENSORS_INDEX_FILE}`,
      );
    }
    return { index: SAFETENSORS_INDEX_FILE, files: [...index.shardFiles] };
  }
  const legacy = (await isFile(join(folder, "pytorch_model.bin")))
    ? " (pytorch_model.bin is not supported: save it as safetensors)"
    : "";
  throw new ModelFolderError(
    folder,
    `has neither ${SAFETENSORS_SINGLE_FILE} nor ${SAFETENSORS_INDEX_FILE}${legacy}`,
  );
}

/** True when the folder has a config.json and every weight file; never throws. */
export async function isCompleteModelFolder(folder: string): Promise<boolean> {
  try {
    if (!(await isFile(join(folder, CONFIG_FILE)))) return false;
    await findWeightFiles(folder);
    return true;
  } catch {
    return false;
  }
}

/** Reads a Hugging Face Qwen2 model folder into memory, validating every file it reads. */
export async function readModelFolder(path: string): Promise<ModelFolder> {
  const folder = resolve(path);
  let folderStat: Awaited<ReturnType<typeof stat>>;
  try {
    folderStat = await stat(folder);
  } catch {
    throw new ModelFolderError(folder, "does not exist");
  }
  if (!folderStat.isDirectory()) throw new ModelFolderError(folder, "is not a folder");
  const configPath = join(folder, CONFIG_FILE);
  if (!(await isFile(configPath))) {
    throw new ModelFolderError(folder, `has no ${CONFIG_FILE}: not a Hugging Face model folder`);
  }
  const config = parseQwen2Config(await readJsonFile(configPath), { fileName: configPath });

  const found = await findWeightFiles(folder);
  let weights: TensorReader;
  if (found.index === undefined) {
    weights = await readSafetensorsFile(join(folder, SAFETENSORS_SINGLE_FILE));
  } else {
    const indexPath = join(folder, found.index);
    const index = parseShardIndex(await readJsonFile(indexPath), indexPath);
    const shards = new Map<string, SafetensorsFile>();
    for (const file of index.shardFiles) shards.set(file, await readSafetensorsFile(join(folder, file)));
    weights = new ShardedSafetensors(index, shards);
  }

  const tokenizerPath = join(folder, TOKENIZER_FILE);
  return {
    path: folder,
    config,
    weights,
    weightFiles: found.index === undefined ? found.files : [found.index, ...found.files],
    tokenizer: (await isFile(tokenizerPath)) ? await readJsonFile(tokenizerPath) : undefined,
    tokenizerConfig: await readOptionalJsonObject(join(folder, TOKENIZER_CONFIG_FILE)),
    generationConfig: await readOptionalJsonObject(join(folder, GENERATION_CONFIG_FILE)),
  };
}

// ---------------------------------------------------------------------------------------------
// Writing

export interface ModelFolderContents {
  readonly config: Qwen2Config;
  /**
   * Weights in Hugging Face names (model.embed_tokens.weight, model.layers.0.self_attn.q_proj.weight, ...):
   * values in memory, or read one tensor at a time while the file is written (see streamFromDevice).
   */
  readonly tensors: TensorSources;
  /** safetensors metadata; default {format: "pt"}, which transformers expects. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** tokenizer.json: its text as is, or an object written as JSON. */
  readonly tokenizer?: unknown;
  readonly tokenizerConfig?: Readonly<Record<string, unknown>>;
  readonly generationConfig?: Readonly<Record<string, unknown>>;
  /** Any other files (special_tokens_map.json, README.md, ...), by plain file name. */
  readonly files?: Readonly<Record<string, string | Uint8Array>>;
}

export interface WriteModelFolderOptions {
  /** Replace an existing folder at the path (default false: fail instead). */
  overwrite?: boolean;
  /**
   * Split the weights into model-0000i-of-0000n.safetensors files of at most about this many
   * bytes, with a model.safetensors.index.json (default: one model.safetensors).
   */
  maxShardBytes?: number;
}

/** Groups tensors (in name order) into shards of at most `maxBytes` each; a bigger tensor gets its own shard. */
function splitIntoShards(tensors: TensorSources, maxBytes: number): Map<string, TensorSource>[] {
  const shards: Map<string, TensorSource>[] = [];
  let current = new Map<string, TensorSource>();
  let currentBytes = 0;
  const sorted = namedTensorEntries(tensors).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, tensor] of sorted) {
    const bytes = tensorByteLength(tensor);
    if (current.size > 0 && currentBytes + bytes > maxBytes) {
      shards.push(current);
      current = new Map();
      currentBytes = 0;
    }
    current.set(name, tensor);
    currentBytes += bytes;
  }
  if (current.size > 0 || shards.length === 0) shards.push(current);
  return shards;
}

async function writeAll(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
    written += bytesWritten;
  }
}

/** Writes and flushes one of the small files (weights go through writeSafetensorsFile, a tensor at a time). */
async function writeDurably(path: string, chunks: Iterable<Uint8Array>): Promise<void> {
  const handle = await open(path, "wx");
  try {
    for (const chunk of chunks) await writeAll(handle, chunk);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncFolder(path: string): Promise<void> {
  // Makes the renames themselves durable; not possible on every platform (Windows), hence optional.
  try {
    const handle = await open(path, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // best effort
  }
}

const utf8 = new TextEncoder();

function textBytes(content: string | Uint8Array): Uint8Array {
  return typeof content === "string" ? utf8.encode(content) : content;
}

function checkPlainFileName(name: string): void {
  if (name.length === 0 || name === "." || name === ".." || /[/\\\0]/.test(name)) {
    throw new TypeError(`extra file name ${JSON.stringify(name)} must be a plain file name`);
  }
}

async function writeFolderContents(
  folder: string,
  contents: ModelFolderContents,
  options: WriteModelFolderOptions,
) {
  const metadata = contents.metadata ?? { format: "pt" };
  await writeDurably(join(folder, CONFIG_FILE), [utf8.encode(serializeQwen2Config(contents.config))]);

  const maxShardBytes = options.maxShardBytes;
  const shards =
    maxShardBytes === undefined ? [contents.tensors] : splitIntoShards(contents.tensors, maxShardBytes);
  if (shards.length === 1) {
    await writeSafetensorsFile(join(folder, SAFETENSORS_SINGLE_FILE), shards[0]!, metadata);
  } else {
    const count = String(shards.length).padStart(5, "0");
    const listing = new Map<string, readonly { name: string; byteLength: number }[]>();
    for (const [i, shard] of shards.entries()) {
      const file = `model-${String(i + 1).padStart(5, "0")}-of-${count}.safetensors`;
      const written = await writeSafetensorsFile(join(folder, file), shard, metadata);
      listing.set(file, written.tensors);
    }
    const index = `${JSON.stringify(buildShardIndex(listing), null, 2)}\n`;
    await writeDurably(join(folder, SAFETENSORS_INDEX_FILE), [utf8.encode(index)]);
  }

  if (contents.tokenizer !== undefined) {
    const text =
      typeof contents.tokenizer === "string"
        ? contents.tokenizer
        : JSON.stringify(contents.tokenizer, null, 2);
    await writeDurably(join(folder, TOKENIZER_FILE), [utf8.encode(text)]);
  }
  if (contents.tokenizerConfig !== undefined) {
    await writeDurably(join(folder, TOKENIZER_CONFIG_FILE), [
      utf8.encode(formatHuggingFaceJson({ ...contents.tokenizerConfig })),
    ]);
  }
  if (contents.generationConfig !== undefined) {
    await writeDurably(join(folder, GENERATION_CONFIG_FILE), [
      utf8.encode(formatHuggingFaceJson({ ...contents.generationConfig })),
    ]);
  }
  for (const [name, content] of Object.entries(contents.files ?? {})) {
    await writeDurably(join(folder, name), [textBytes(content)]);
  }
  await syncFolder(folder);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes a model folder atomically. The folder is built under a hidden temporary name beside
 * `path` and renamed into place once complete; with `overwrite`, the old folder is first moved
 * aside and deleted only after the new one is in place (and restored if that rename fails).
 */
export async function writeModelFolder(
  path: string,
  contents: ModelFolderContents,
  options: WriteModelFolderOptions = {},
): Promise<void> {
  const target = resolve(path);
  const reserved = new Set([
    CONFIG_FILE,
    SAFETENSORS_SINGLE_FILE,
    SAFETENSORS_INDEX_FILE,
    TOKENIZER_FILE,
    TOKENIZER_CONFIG_FILE,
    GENERATION_CONFIG_FILE,
  ]);
  for (const name of Object.keys(contents.files ?? {})) {
    checkPlainFileName(name);
    if (reserved.has(name) || /^model-\d+-of-\d+\.safetensors$/.test(name)) {
      throw new TypeError(`extra file ${name} would replace a file the writer makes itself`);
    }
  }
  if (options.maxShardBytes !== undefined && !(options.maxShardBytes > 0)) {
    throw new RangeError(`maxShardBytes must be positive, got ${options.maxShardBytes}`);
  }
  // The reader's checks, before anything is written: a folder that could not be loaded back (e.g. a
  // token id outside a shrunk vocabulary) is refused here, naming the field, instead of at load time.
  parseQwen2Config(JSON.parse(serializeQwen2Config(contents.config)), {
    fileName: `${join(target, CONFIG_FILE)} (to be written)`,
  });
  if (!options.overwrite && (await exists(target))) {
    throw new ModelFolderError(target, "already exists (pass overwrite: true to replace it)");
  }

  const parent = dirname(target);
  await mkdir(parent, { recursive: true });
  const suffix = `${process.pid}-${randomBytes(4).toString("hex")}`;
  const temporary = join(parent, `.${basename(target)}.tmp-${suffix}`);
  await mkdir(temporary);
  try {
    await writeFolderContents(temporary, contents, options);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }

  if (!(await exists(target))) {
    try {
      await rename(temporary, target);
    } catch (error) {
      await rm(temporary, { recursive: true, force: true });
      throw error;
    }
    await syncFolder(parent);
    return;
  }
  // rename() cannot replace a non-empty folder: move the old one aside first.
  const previous = join(parent, `.${basename(target)}.old-${suffix}`);
  await rename(target, previous);
  try {
    await rename(temporary, target);
  } catch (error) {
    await rename(previous, target);
    await rm(temporary, { recursive: true, force: true });
    throw error;
  }
  await syncFolder(parent);
  await rm(previous, { recursive: true, force: true });
}
