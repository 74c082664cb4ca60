#!/usr/bin/env bash
# Installs kwctl from Kubewarden's pinned release asset (.github/tools.env) into <dir>:
# downloads kwctl-linux-x86_64.zip, checks its sha256 against KWCTL_SHA256 when pinned (else
# against the digest GitHub records for the release asset),
# verifies the binary's Sigstore bundle with cosign against the identity of Kubewarden's
# kwctl release workflow at that tag, and installs it as <dir>/kwctl.
#   install-kwctl.sh <dir>
# (TOOLS_ENV, GITHUB_API and COSIGN override the pin file, GitHub's API and cosign, for tests)
# Needs curl, jq, unzip, sha256sum and cosign (sigstore/cosign-installer in the workflows).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${1:?usage: install-kwctl.sh <dir>}"
tools="${TOOLS_ENV:-$root/.github/tools.env}"
api="${GITHUB_API:-https://api.github.com}"
cosign="${COSIGN:-cosign}"
KWCTL_VERSION="" KWCTL_RELEASES="" KWCTL_SHA256=""
while IFS='=' read -r key value; do
  case "$key" in KWCTL_VERSION|KWCTL_RELEASES|KWCTL_SHA256) printf -v "$key" '%s' "$value" ;; esac
done < <(grep -E '^[A-Z0-9_]+=' "$tools")
[ -n "$KWCTL_VERSION" ] && [ -n "$KWCTL_RELEASES" ] || { echo "install-kwctl.sh: $tools lacks KWCTL_VERSION or KWCTL_RELEASES" >&2; exit 1; }
asset=kwctl-linux-x86_64
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
curl -fsSL "$KWCTL_RELEASES/$KWCTL_VERSION/$asset.zip" -o "$work/$asset.zip"
digest="$(sha256sum "$work/$asset.zip" | cut -d' ' -f1)"
repo="${KWCTL_RELEASES#*github.com/}"; repo="${repo%/releases/download}"
if [ -n "$KWCTL_SHA256" ]; then
  [ "$digest" = "$KWCTL_SHA256" ] || { echo "install-kwctl.sh: $asset.zip $KWCTL_VERSION has sha256 $digest, $tools pins $KWCTL_SHA256" >&2; exit 1; }
else
  # no pin yet: the digest GitHub records for the release asset must match
  published="$(curl -fsSL ${GH_TOKEN:+-H "Authorization: Bearer $GH_TOKEN"} \
    "$api/repos/$repo/releases/tags/$KWCTL_VERSION" \
    | jq -r --arg name "$asset.zip" '.assets[] | select(.name == $name) | .digest // empty')"
  [ "$published" = "sha256:$digest" ] || { echo "install-kwctl.sh: $asset.zip $KWCTL_VERSION has sha256 $digest, the release records '${published:-no digest}'" >&2; exit 1; }
fi
unzip -q -o "$work/$asset.zip" -d "$work"
"$cosign" verify-blob \
  --certificate-oidc-issuer=https://token.actions.githubusercontent.com \
  --certificate-identity="https://github.com/$repo/.github/workflows/build-kwctl.yml@refs/tags/$KWCTL_VERSION" \
  --bundle "$work/$asset.bundle.sigstore" "$work/$asset"
mkdir -p "$dir"
install -m 0755 "$work/$asset" "$dir/kwctl"
if [ -z "$KWCTL_SHA256" ]; then
  echo "::warning::kwctl $KWCTL_VERSION checked against the release's recorded digest: pin KWCTL_SHA256=$digest in .github/tools.env"
fi
"$dir/kwctl" --version
