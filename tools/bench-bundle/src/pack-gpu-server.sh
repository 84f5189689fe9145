#!/usr/bin/env bash
# `npm run bench:gpu-server [-- [--with-tests] [out-folder]]`: packs the portable benchmark for a Linux x64
# GPU server that has the GPU driver but neither Node nor a Vulkan loader (CUDA container images, for
# one), into one folder (default tools/bench-bundle/dist/ragen-gpu-server):
#
#   run.sh                  on the server: `./run.sh bench [bench.mjs options]`, `./run.sh tests [files]`
#                           or `./run.sh suite [--within S] [--out DIR]`
#   suite.plan              the measurements `./run.sh suite` makes, most wanted first, each with a limit
#   bench.tar.xz            the portable benchmark folder (npm run bench:bundle), compressed
#   node.xz                 this machine's Node binary, compressed
#   vulkan/*.deb            Debian's Vulkan loader and glvnd libraries (NVIDIA's Vulkan driver needs them),
#                           unpacked on the server into a private folder where it lacks any of them
#   tensor-tests.tar.xz     with --with-tests: @ragen/tensor-webgpu with its sources, tests and the
#                           dependencies vitest needs, to run the kernel tests on the server's adapter
#
# Everything is compressed with xz at its default level, about 40 MB with the tests (XZ_OPT=-0 packs
# faster and larger). Copy the folder to the server and run `./run.sh bench --out results` there, as any
# user: nothing is unpacked outside $RAGEN_GPU_SERVER_WORK (default /tmp/ragen-gpu-server).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$(cd "$here/../.." && pwd)"
with_tests=false
out="$here/dist/ragen-gpu-server"
for arg in "$@"; do
  case "$arg" in
  --with-tests) with_tests=true ;;
  -*)
    echo "pack-gpu-server: unknown option $arg (options: --with-tests, then the output folder)" >&2
    exit 2
    ;;
  *) out="$(cd "${INIT_CWD:-$PWD}" && realpath -m "$arg")" ;; # relative to where npm run was typed
  esac
done
log() { printf '[pack-gpu-server] %s\n' "$*" >&2; }

rm -rf "$out"
mkdir -p "$out/vulkan"
log "building the benchmark folder"
bench="$(mktemp -d)"
trap 'rm -rf "$bench"' EXIT
node "$here/src/build.mjs" --out "$bench/bench" >/dev/null
tar -C "$bench" -cJf "$out/bench.tar.xz" bench

log "compressing $(command -v node) ($(node --version))"
xz -T0 -c "$(command -v node)" >"$out/node.xz"

# The Vulkan loader and glvnd's libraries. The server's driver brings its own ICD, but on an H200 CUDA
# image the loader found NVIDIA's (libGLX_nvidia.so.0) and reported "Could not get 'vkCreateInstance'" and
# no drivers until these were present as well.
for package in libvulkan1 libglvnd0 libgl1 libglx0 libegl1 libgles2 libopengl0; do
  if ! (cd "$out/vulkan" && apt-get download "$package" >/dev/null 2>&1); then
    log "warning: apt-get download $package failed; the folder works only where the server has it"
  fi
done
log "fetched Debian's Vulkan loader and glvnd libraries ($(ls "$out/vulkan" | wc -l) packages)"

if $with_tests; then
  log "packing @ragen/tensor-webgpu with its tests and their dependencies"
  stage="$(mktemp -d)"
  trap 'rm -rf "$bench" "$stage"' EXIT
  tests="$stage/packages/tensor-webgpu"
  (cd "$root" && pnpm --filter @ragen/tensor-webgpu deploy --legacy --offline "$tests" >/dev/null)
  package="$root/packages/tensor-webgpu"
  cp -r "$package/src" "$package/test" "$package/tsconfig.json" "$package/vitest.config.ts" "$tests/"
  cp "$root/tsconfig.base.json" "$stage/" # the package's tsconfig extends it
  # What vitest does not need on a Linux x64 server: other platforms' Dawn, compilers, bundlers and
  # browsers; Dawn's module itself is the benchmark folder's (run.sh links it).
  store="$tests/node_modules/.pnpm"
  for dir in "$store"/webgpu@*/node_modules/webgpu/dist/*; do
    [[ "$(basename "$dir")" == linux-x64 ]] || rm -rf "$dir"
  done
  rm -f "$store"/webgpu@*/node_modules/webgpu/dist/linux-x64/dawn.node
  rm -rf "$store"/typescript@* "$store"/playwright-core@* "$store"/tsup@* "$store"/esbuild@* \
    "$store"/@esbuild+* "$store"/lightningcss* "$store"/rollup@* "$store"/@rollup+* "$store"/sucrase@*
  tar -C "$stage" -cJf "$out/tensor-tests.tar.xz" packages tsconfig.base.json
fi

cp "$here/src/gpu-server-run.sh" "$out/run.sh"
chmod +x "$out/run.sh"
cp "$here/src/gpu-server-suite.plan" "$out/suite.plan"
log "wrote $out ($(du -sh "$out" | cut -f1)); on the server: ./run.sh suite --within 540 --out results"
