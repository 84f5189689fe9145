#!/usr/bin/env bash
# Idempotent set-up behind `npm run quest` and `npm test`: pnpm, the workspace's dependencies and,
# once a package needs WebGPU, a Vulkan adapter (Mesa lavapipe on machines without a GPU).
# A second run only checks stamps and returns in well under a second.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
PNPM_VERSION="12.21.0"
log() { printf '[setup] %s\n' "$*" >&2; }

ensure_pnpm() {
  if command -v pnpm >/dev/null 2>&1 && [[ "$(pnpm --version 2>/dev/null)" == "$PNPM_VERSION" ]]; then
    return
  fi
  log "installing pnpm $PNPM_VERSION (npm i -g)"
  if ! npm install -g "pnpm@$PNPM_VERSION" >/dev/null 2>&1; then
    log "error: could not install pnpm globally; run 'npm install -g pnpm@$PNPM_VERSION' (as root or with a user prefix) and retry"
    exit 1
  fi
}

# Newest modification time among the files that decide what `pnpm install` does.
manifest_stamp() {
  find . -maxdepth 3 \( -name node_modules -prune \) -o \
    \( -name package.json -o -name pnpm-lock.yaml -o -name pnpm-workspace.yaml \) -printf '%T@\n' |
    sort -n | tail -1
}

ensure_dependencies() {
  local stamp_file="node_modules/.ragen-install-stamp"
  local current
  current="$(manifest_stamp)"
  if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$current" ]]; then
    return
  fi
  log "installing workspace dependencies (pnpm install)"
  local frozen=()
  [[ -f pnpm-lock.yaml ]] && frozen=(--frozen-lockfile)
  pnpm install "${frozen[@]}" --reporter=append-only >&2
  echo "$current" >"$stamp_file"
}

needs_webgpu() { grep -qs '"webgpu"' packages/*/package.json examples/*/package.json; }

has_vulkan_icd() {
  compgen -G "/usr/share/vulkan/icd.d/*.json" >/dev/null || compgen -G "/etc/vulkan/icd.d/*.json" >/dev/null
}

ensure_webgpu_adapter() {
  needs_webgpu || return 0
  if has_vulkan_icd && ldconfig -p 2>/dev/null | grep -q libvulkan.so.1; then
    return
  fi
  if [[ "$(id -u)" != "0" ]]; then
    log "error: no Vulkan driver found, and WebGPU in Node needs one."
    log "fix (Debian bookworm, as root): echo 'deb http://deb.debian.org/debian bookworm-backports main' > /etc/apt/sources.list.d/backports.list"
    log "  && apt-get update && apt-get install -y -t bookworm-backports mesa-vulkan-drivers libvulkan1"
    exit 1
  fi
  log "installing Mesa lavapipe (software Vulkan) from bookworm-backports"
  echo 'deb http://deb.debian.org/debian bookworm-backports main' >/etc/apt/sources.list.d/ragen-backports.list
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports mesa-vulkan-drivers libvulkan1 >&2
}

needs_chromium() { grep -qs '"playwright-core"' packages/*/package.json examples/*/package.json tools/*/package.json; }

# Browser tests drive Debian's Chromium with playwright-core (which downloads no browser of its own).
ensure_chromium() {
  needs_chromium || return 0
  [[ -x /usr/bin/chromium ]] && return
  if [[ "$(id -u)" != "0" ]]; then
    log "error: browser tests need Chromium at /usr/bin/chromium; as root: apt-get update && apt-get install -y chromium"
    exit 1
  fi
  log "installing Chromium (Debian) for the browser tests"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
}

ensure_pnpm
ensure_dependencies
ensure_webgpu_adapter
ensure_chromium
