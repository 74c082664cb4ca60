#!/usr/bin/env bash
# Installs kwctl from Kubewarden's pinned release asset (.github/tools.env) into <dir>:
# downloads kwctl-linux-x86_64.zip, checks its sha256 against KWCTL_SHA256 when pinned,
# verifies the binary's Sigstore bundle with cosign against the identity of Kubewarden's
# kwctl release workflow at that tag, and installs it as <dir>/kwctl.
#   install-kwctl.sh <dir>
# Needs curl, unzip, sha256sum and cosign (sigstore/cosign-installer in the workflows).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${1:?usage: install-kwctl.sh <dir>}"
KWCTL_VERSION="" KWCTL_RELEASES="" KWCTL_SHA256=""
while IFS='=' read -r key value; do
  case "$key" in KWCTL_VERSION|KWCTL_RELEASES|KWCTL_SHA256) printf -v "$key" '%s' "$value" ;; esac
done < <(grep -E '^[A-Z0-9_]+=' "$root/.github/tools.env")
[ -n "$KWCTL_VERSION" ] && [ -n "$KWCTL_RELEASES" ] || { echo "install-kwctl.sh: .github/tools.env lacks KWCTL_VERSION or KWCTL_RELEASES" >&2; exit 1; }
asset=kwctl-linux-x86_64
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
curl -fsSL "$KWCTL_RELEASES/$KWCTL_VERSION/$asset.zip" -o "$work/$asset.zip"
digest="$(sha256sum "$work/$asset.zip" | cut -d' ' -f1)"
if [ -n "$KWCTL_SHA256" ]; then
  [ "$digest" = "$KWCTL_SHA256" ] || { echo "install-kwctl.sh: $asset.zip $KWCTL_VERSION has sha256 $digest, .github/tools.env pins $KWCTL_SHA256" >&2; exit 1; }
fi
unzip -q -o "$work/$asset.zip" -d "$work"
repo="${KWCTL_RELEASES#https://github.com/}"; repo="${repo%/releases/download}"
cosign verify-blob \
  --certificate-oidc-issuer=https://token.actions.githubusercontent.com \
  --certificate-identity="https://github.com/$repo/.github/workflows/build-kwctl.yml@refs/tags/$KWCTL_VERSION" \
  --bundle "$work/$asset.bundle.sigstore" "$work/$asset"
mkdir -p "$dir"
install -m 0755 "$work/$asset" "$dir/kwctl"
if [ -z "$KWCTL_SHA256" ]; then
  echo "::warning::kwctl $KWCTL_VERSION verified by its Sigstore bundle only: pin KWCTL_SHA256=$digest in .github/tools.env"
fi
"$dir/kwctl" --version
