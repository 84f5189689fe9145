#!/usr/bin/env bash
# On a GPU server without Node or a Vulkan loader (packed by `npm run bench:gpu-server`):
#   ./run.sh bench [bench.mjs options]      the portable benchmark on the server's GPU
#   ./run.sh tests [test files or filters]  the tensor package's kernel tests on the server's adapter
# Node and the loader are unpacked into $RAGEN_GPU_SERVER_WORK (default /tmp/ragen-gpu-server), nothing
# outside it is changed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="${RAGEN_GPU_SERVER_WORK:-/tmp/ragen-gpu-server}"
mkdir -p "$work"

# Unpacked afresh each time (seconds): a folder packed again must not run an older copy.
xz -dc "$here/node.xz" >"$work/node.partial"
chmod +x "$work/node.partial"
mv "$work/node.partial" "$work/node"
rm -rf "$work/bench"
tar -xJf "$here/bench.tar.xz" -C "$work"
export PATH="$work:$PATH"

# The carried libraries where the server lacks any of them: the Vulkan loader, and glvnd's, without which
# NVIDIA's Vulkan driver was found but not usable on a CUDA image.
missing=()
for library in libvulkan.so.1 libGLdispatch.so.0 libGLX.so.0 libGL.so.1 libEGL.so.1 libGLESv2.so.2 libOpenGL.so.0; do
  ldconfig -p 2>/dev/null | grep -q "${library//./\\.} " || missing+=("$library")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  if ! compgen -G "$here/vulkan/*.deb" >/dev/null; then
    echo "run.sh: this server has no ${missing[*]} and none was packed" >&2
    exit 1
  fi
  rm -rf "$work/vulkan"
  for deb in "$here"/vulkan/*.deb; do dpkg-deb -x "$deb" "$work/vulkan"; done
  for library in "${missing[@]}"; do
    [[ -e "$work/vulkan/usr/lib/x86_64-linux-gnu/$library" ]] || echo "run.sh: warning: $library was not packed" >&2
  done
  export LD_LIBRARY_PATH="$work/vulkan/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# Containers that mount NVIDIA's driver keep its Vulkan ICD outside the loader's default folders.
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [[ -z "${VK_DRIVER_FILES:-}" && -f "$nvidia_icd" ]] &&
  ! compgen -G "/usr/share/vulkan/icd.d/nvidia*.json" >/dev/null &&
  ! compgen -G "/etc/vulkan/icd.d/nvidia*.json" >/dev/null; then
  export VK_DRIVER_FILES="$nvidia_icd"
fi

mode="${1:-bench}"
[[ $# -gt 0 ]] && shift
case "$mode" in
bench) exec node "$work/bench/bench.mjs" "$@" ;;
tests)
  if [[ ! -f "$here/tensor-tests.tar.xz" ]]; then
    echo "run.sh: the tests were not packed (npm run bench:gpu-server -- --with-tests)" >&2
    exit 2
  fi
  rm -rf "$work/tests"
  mkdir -p "$work/tests"
  tar -xJf "$here/tensor-tests.tar.xz" -C "$work/tests"
  cd "$work/tests/packages/tensor-webgpu"
  for webgpu in node_modules/.pnpm/webgpu@*/node_modules/webgpu; do
    ln -sf "$work/bench/node_modules/webgpu/dist/linux-x64/dawn.node" "$webgpu/dist/linux-x64/dawn.node"
  done
  exec node node_modules/vitest/vitest.mjs run "$@"
  ;;
*)
  echo "run.sh: unknown mode \"$mode\" (bench or tests)" >&2
  exit 2
  ;;
esac
