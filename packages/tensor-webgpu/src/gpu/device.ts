/**
 * One call to get a WebGPU device in Node (Dawn, npm `webgpu`) or in a browser (`navigator.gpu`), with
 * the adapter's higher limits and the optional features we use (shader-f16, subgroups, timestamps).
 */

export interface DeviceOptions {
  /** Prefer a low-power or high-performance adapter where there are several. */
  powerPreference?: GPUPowerPreference;
  /**
   * Keep WebGPU's bounds checks in shaders. Off by default in Node: our kernels guard their own
   * accesses, and the checks cost ~30% in matmul on lavapipe.
   */
  robust?: boolean;
  /** Extra Dawn toggles for Node (`enable-dawn-features=...` style strings). */
  dawnFlags?: string[];
  /** Do not ask for these optional features even when present (for testing fallbacks). */
  disableFeatures?: GPUFeatureName[];
  /**
   * For testing tensor-core kernels where there are none: on an adapter without subgroup matrices (but
   * with shader-f16 and subgroups), offer these shapes and run the kernels that use them rewritten into
   * subgroup code (see emulateSubgroupMatrices). Correct but slow; an adapter with real ones ignores this.
   */
  emulateSubgroupMatrices?: readonly SubgroupMatrixConfig[];
}

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A software adapter (lavapipe, SwiftShader): slow, but the same WGSL runs. */
  isSoftware: boolean;
}

/** One multiply shape the adapter's matrix units take (left M x K, right K x N, result M x N). */
export interface SubgroupMatrixConfig {
  componentType: string;
  resultType: string;
  M: number;
  N: number;
  K: number;
}

export interface AcquiredDevice {
  device: GPUDevice;
  adapter: AdapterSummary;
  features: {
    shaderF16: boolean;
    subgroups: boolean;
    timestampQuery: boolean;
    /**
     * Matrix-unit (tensor core) shapes usable from WGSL through Dawn's experimental subgroup matrices;
     * empty where the adapter has none (every software adapter, and browsers without the feature).
     */
    subgroupMatrixConfigs: readonly SubgroupMatrixConfig[];
    /** The configs are emulated (DeviceOptions.emulateSubgroupMatrices): kernels run as subgroup code. */
    subgroupMatrixEmulated: boolean;
    /**
     * WGSL's buffer_view language feature: untyped workgroup buffers read and written through typed
     * views (the pipelined tensor-core kernel's wide stores).
     */
    bufferView: boolean;
    /**
     * Subgroup-matrix loads take a buffer view: probed by compiling one where the adapter has subgroup
     * matrices and WGSL buffer views (both are experimental, and nothing else says they combine); where the
     * matrices are emulated, the same as `bufferView`.
     */
    subgroupMatrixViews: boolean;
  };
  /** Every optional feature the adapter offers (requested or not), sorted: for reports. */
  adapterFeatures: string[];
  /** The adapter's subgroup sizes (0 when unknown). */
  subgroupSizes: { min: number; max: number };
  limits: GPUSupportedLimits;
}

const SUBGROUP_MATRIX = "chromium-experimental-subgroup-matrix" as GPUFeatureName;

export class NoAdapterError extends Error {
  constructor(detail: string) {
    super(
      `No WebGPU adapter found (${detail}).\n` +
        "In Node this needs a Vulkan driver. On a machine without a GPU, install Mesa's software Vulkan\n" +
        "(lavapipe) — Debian bookworm, as root:\n" +
        "  echo 'deb http://deb.debian.org/debian bookworm-backports main' > /etc/apt/sources.list.d/backports.list\n" +
        "  apt-get update && apt-get install -y -t bookworm-backports mesa-vulkan-drivers libvulkan1\n" +
        "(`bash scripts/setup.sh` in the RAGEN.ts repository does this.) In a browser, use one with WebGPU enabled.",
    );
    this.name = "NoAdapterError";
  }
}

export class DeviceLostError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(
      `The WebGPU device was lost (${reason}): ${message}. Tensors on it are gone; create a new context.`,
    );
    this.name = "DeviceLostError";
  }
}

// Dawn's GPU instance must stay referenced while any device lives: if it is garbage-collected, Dawn
// reads freed memory (crashes or hangs that look flaky). So it is kept here for the process's life.
let nodeGpu: GPU | undefined;

export function isNode(): boolean {
  return (
    typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === "string"
  );
}

async function getGpu(options: DeviceOptions): Promise<GPU> {
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  if (!isNode()) {
    if (!nav?.gpu) throw new NoAdapterError("navigator.gpu is missing: this browser has no WebGPU");
    return nav.gpu;
  }
  if (nodeGpu) return nodeGpu;
  let module: { create: (flags: string[]) => GPU; globals: object };
  try {
    const name = "webgpu"; // a variable, so browser bundlers leave this Node-only import alone
    module = (await import(/* @vite-ignore */ name)) as typeof module;
  } catch (error) {
    throw new NoAdapterError(`the npm package "webgpu" could not be loaded: ${(error as Error).message}`);
  }
  Object.assign(globalThis, module.globals);
  // vulkan_enable_f16_on_nvidia: Dawn hides shader-f16 on NVIDIA's Vulkan driver unless asked (measured
  // on an H100, driver 580: without it the adapter offers no shader-f16, hence no f16 kernels).
  const features = [
    "allow_unsafe_apis",
    "vulkan_enable_f16_on_nvidia",
    ...(options.robust ? [] : ["disable_robustness"]),
  ];
  // timestamp_quantization rounds timestamp queries (a browser's guard against timing attacks); the kernel
  // profiler needs them exact.
  nodeGpu = module.create([
    `enable-dawn-features=${features.join(",")}`,
    "disable-dawn-features=timestamp_quantization",
    ...(options.dawnFlags ?? []),
  ]);
  return nodeGpu;
}

const SOFTWARE = /llvmpipe|lavapipe|swiftshader|software|cpu/i;

/**
 * Whether this device compiles a subgroup-matrix load from a view of a workgroup buffer, for the first f16
 * shape of `configs`: a kernel that would not compile is then never offered (false without such a shape).
 */
export async function matrixLoadsThroughViews(
  device: GPUDevice,
  configs: readonly SubgroupMatrixConfig[],
  lanes: number,
): Promise<boolean> {
  const config = configs.find((c) => c.componentType === "f16");
  if (!config || lanes === 0) return false;
  const { M, K } = config;
  const left = `subgroup_matrix_left<f16, ${K}, ${M}>`;
  const code = /* wgsl */ `enable f16;
enable chromium_experimental_subgroup_matrix;
var<workgroup> stage: buffer<${M * K * 2}>;
@group(0) @binding(0) var<storage, read_write> out: array<f16>;
@compute @workgroup_size(${lanes})
fn main() {
  let halves = bufferView<array<f16, ${M * K}>>(&stage, 0);
  subgroupMatrixStore(&out, 0u, subgroupMatrixLoad<${left}>(halves, 0u, false, ${K}u), false, ${K}u);
}`;
  device.pushErrorScope("validation");
  try {
    const module = device.createShaderModule({ code, label: "subgroup-matrix view probe" });
    await device.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" } });
    return true;
  } catch {
    return false;
  } finally {
    await device.popErrorScope();
  }
}

/** Acquire a device with the adapter's own limits (not WebGPU's low defaults). */
export async function acquireDevice(options: DeviceOptions = {}): Promise<AcquiredDevice> {
  const gpu = await getGpu(options);
  const adapter = await gpu.requestAdapter({ powerPreference: options.powerPreference });
  if (!adapter) throw new NoAdapterError("requestAdapter() returned null");
  const disabled = new Set(options.disableFeatures ?? []);
  const want = (name: GPUFeatureName) => adapter.features.has(name) && !disabled.has(name);
  const requiredFeatures = (
    ["shader-f16", "subgroups", "timestamp-query", SUBGROUP_MATRIX] as GPUFeatureName[]
  ).filter(want);
  const requiredLimits: Record<string, number> = {};
  for (const key of [
    "maxStorageBufferBindingSize",
    "maxBufferSize",
    "maxComputeWorkgroupStorageSize",
    "maxComputeInvocationsPerWorkgroup",
    "maxComputeWorkgroupSizeX",
    "maxComputeWorkgroupSizeY",
    "maxComputeWorkgroupSizeZ",
    "maxComputeWorkgroupsPerDimension",
    "maxStorageBuffersPerShaderStage",
  ] as const) {
    requiredLimits[key] = adapter.limits[key];
  }
  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  const info = adapter.info as GPUAdapterInfo & {
    subgroupMinSize?: number;
    subgroupMaxSize?: number;
    subgroupMatrixConfigs?: readonly (SubgroupMatrixConfig & { resultComponentType?: string })[];
  };
  const summary: AdapterSummary = {
    vendor: info?.vendor ?? "",
    architecture: info?.architecture ?? "",
    device: info?.device ?? "",
    description: info?.description ?? "",
    isSoftware: false,
  };
  summary.isSoftware =
    (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter === true ||
    SOFTWARE.test(`${summary.vendor} ${summary.architecture} ${summary.device} ${summary.description}`);
  const shaderF16 = device.features.has("shader-f16");
  const realConfigs =
    device.features.has(SUBGROUP_MATRIX) && shaderF16
      ? (info?.subgroupMatrixConfigs ?? []).map((c) => ({
          componentType: String(c.componentType),
          // WebGPU's name; older drafts said resultType.
          resultType: String(c.resultComponentType ?? c.resultType),
          M: c.M,
          N: c.N,
          K: c.K,
        }))
      : [];
  const bufferView = gpu.wgslLanguageFeatures?.has("buffer_view") ?? false;
  const emulated =
    realConfigs.length === 0 &&
    (options.emulateSubgroupMatrices?.length ?? 0) > 0 &&
    shaderF16 &&
    device.features.has("subgroups");
  return {
    device,
    adapter: summary,
    features: {
      shaderF16,
      subgroups: device.features.has("subgroups"),
      timestampQuery: device.features.has("timestamp-query"),
      subgroupMatrixConfigs: emulated ? [...options.emulateSubgroupMatrices!] : realConfigs,
      subgroupMatrixEmulated: emulated,
      bufferView,
      subgroupMatrixViews: emulated
        ? bufferView
        : bufferView && (await matrixLoadsThroughViews(device, realConfigs, info?.subgroupMaxSize ?? 0)),
    },
    adapterFeatures: [...adapter.features].map(String).sort(),
    subgroupSizes: { min: info?.subgroupMinSize ?? 0, max: info?.subgroupMaxSize ?? 0 },
    limits: device.limits,
  };
}
