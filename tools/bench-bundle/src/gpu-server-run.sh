#!/usr/bin/env bash
# On a GPU server without Node or a Vulkan loader (packed by `npm run bench:gpu-server`):
#   ./run.sh bench [bench.mjs options]      the portable benchmark on the server's GPU
#   ./run.sh tests [test files or filters]  the tensor package's kernel tests on the server's adapter
#   ./run.sh suite [--within S] [--out DIR] [--plan FILE]
#                                           the measurements of suite.plan, most wanted first, each under
#                                           its own time limit and all within S seconds (default 540)
# Node and the loader are unpacked into $RAGEN_GPU_SERVER_WORK (default /tmp/ragen-gpu-server), nothing
# outside it is changed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="${RAGEN_GPU_SERVER_WORK:-/tmp/ragen-gpu-server}"
mkdir -p "$work"

# Node, the benchmark and, where the server lacks them, the carried libraries; exported for what runs.
prepare_server() {
  # Unpacked afresh each time (seconds): a folder packed again must not run an older copy.
  xz -dc "$here/node.xz" >"$work/node.partial"
  chmod +x "$work/node.partial"
  mv "$work/node.partial" "$work/node"
  rm -rf "$work/bench"
  tar -xJf "$here/bench.tar.xz" -C "$work"
  export PATH="$work:$PATH"

  # The carried libraries where the server lacks any of them: the Vulkan loader, and glvnd's, without which
  # NVIDIA's Vulkan driver was found but not usable on a CUDA image.
  local -a missing=()
  local library deb nvidia_icd
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
}

# A suite's parts run this script again, with everything already unpacked and exported.
[[ "${RAGEN_GPU_SERVER_READY:-}" == "$work" ]] || prepare_server

# Runs each part of the plan under `timeout`, in order, while the suite's time lasts, and keeps
# <out>/suite.md up to date after each part (a suite killed from outside still leaves it): each part's
# outcome and seconds. A part's output goes to <out>/<name>/output.log too.
run_suite() {
  local within=540 out=suite-results plan="$here/suite.plan"
  while [[ $# -gt 0 ]]; do
    case "$1" in
    --within | --out | --plan)
      if [[ $# -lt 2 ]]; then
        echo "run.sh suite: $1 needs a value" >&2
        return 2
      fi
      case "$1" in
      --within) within="$2" ;;
      --out) out="$2" ;;
      --plan) plan="$2" ;;
      esac
      shift 2
      ;;
    *)
      echo "run.sh suite: unknown option $1 (options: --within SECONDS, --out DIR, --plan FILE)" >&2
      return 2
      ;;
    esac
  done
  if ! [[ "$within" =~ ^[0-9]+$ ]]; then
    echo "run.sh suite: --within must be a whole number of seconds (got \"$within\")" >&2
    return 2
  fi
  if [[ ! -f "$plan" ]]; then
    echo "run.sh suite: no plan at $plan" >&2
    return 2
  fi
  local -a names=() limits=() commands=()
  local number=0 line name limit command
  while IFS= read -r line || [[ -n "$line" ]]; do
    number=$((number + 1))
    [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
    read -r name limit command <<<"$line"
    if ! [[ "$name" =~ ^[A-Za-z0-9._-]+$ && "$limit" =~ ^[0-9]+$ && "$command" =~ ^(bench|tests)([[:space:]]|$) ]]; then
      echo "run.sh suite: $plan line $number: expected a name, a number of seconds and a bench or tests command, got: $line" >&2
      return 2
    fi
    names+=("$name") limits+=("$limit") commands+=("$command")
  done <"$plan"
  if [[ ${#names[@]} -eq 0 ]]; then
    echo "run.sh suite: $plan names no part" >&2
    return 2
  fi

  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  export RAGEN_GPU_SERVER_READY="$work"
  local -a outcomes=() took=()
  local began_at
  began_at="$(date -u '+%Y-%m-%d %H:%M UTC')"
  write_report() {
    local j rows=""
    for j in "${!names[@]}"; do
      rows+="| ${names[$j]} | ${outcomes[$j]:-not reached yet} | ${took[$j]:-} | ${limits[$j]} | \`${commands[$j]}\` |\n"
    done
    printf '# Suite on %s, from %s\n\n| part | outcome | seconds | limit | command |\n|---|---|---|---|---|\n%b' \
      "${HOSTNAME:-$(uname -n)}" "$began_at" "$rows" >"$out/suite.md.partial"
    mv "$out/suite.md.partial" "$out/suite.md"
  }
  write_report
  local start=$SECONDS failed=0 i
  for i in "${!names[@]}"; do
    name="${names[$i]}" limit="${limits[$i]}" command="${commands[$i]}"
    local left=$((within - (SECONDS - start))) outcome
    # A part needs time to start Node and Dawn and to measure anything at all: 20 s, or its whole limit
    # where that is less.
    if [[ $left -lt 20 && $left -lt $limit ]]; then
      outcome="not started: the suite's time was spent"
    else
      [[ $limit -gt $left ]] && limit=$left
      mkdir -p "$out/$name"
      local -a args
      read -r -a args <<<"$command"
      # Bench parts share one tuning file: a later part measures only the problems earlier ones left.
      [[ "${args[0]}" == bench ]] && args+=(--out "$out/$name" --tuning-file "$out/kernel-tuning.json")
      printf '\n[suite] %s (at most %d s): %s\n' "$name" "$limit" "${args[*]}" >&2
      local began=$SECONDS code
      set +e
      timeout --kill-after=10 "$limit" "$here/run.sh" "${args[@]}" 2>&1 | tee "$out/$name/output.log"
      code=${PIPESTATUS[0]}
      set -e
      took[$i]=$((SECONDS - began))
      limits[$i]=$limit
      case "$code" in
      0) outcome="done" ;;
      124 | 137) outcome="stopped at its time limit (what it finished is kept)" ;;
      *) outcome="failed (exit $code)" ;;
      esac
      [[ $code -ne 0 ]] && failed=1
    fi
    printf '[suite] %s: %s\n' "$name" "$outcome" >&2
    outcomes[$i]="$outcome"
    write_report
  done
  printf '\n' >&2
  cat "$out/suite.md" >&2
  return $failed
}

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
suite) run_suite "$@" ;;
*)
  echo "run.sh: unknown mode \"$mode\" (bench, tests or suite)" >&2
  exit 2
  ;;
esac
