#!/usr/bin/env bash
# The release steps of one policy that need no GitHub service, in one file shared by
# .github/workflows/release.yml and `make publish-local` (which rehearses them against a
# local OCI registry and a local git remote), so the rehearsal tests what the workflow runs.
#
#   release.sh identity [--release]
#       Prints the publishing identity (.github/publishing.env, or $PUBLISHING_ENV) as
#       KEY=value lines. Refuses a missing or empty key; with --release also the
#       placeholders (an address or host under .invalid, the zero Artifact Hub id).
#   release.sh tag <policy>/vX.Y.Z
#       Checks the tag against policies/<policy>/metadata.yml (io.kubewarden.policy.version,
#       com.github.release.tag) and prints policy=, version=, wasm= (for $GITHUB_OUTPUT).
#   release.sh push <annotated.wasm> registry://<repository>:<tag> [kwctl push options]
#       kwctl push -o json; prints the immutable reference (<repository>@sha256:<digest>)
#       read from kwctl's JSON output, after checking that it names the pushed repository.
#   release.sh artifacthub <policy> <out-dir>
#       Writes <out-dir>/<policy>/<version>/{artifacthub-pkg.yml,README.md} (the package
#       from `kwctl scaffold artifacthub`, the README Artifact Hub shows beside it) and
#       <out-dir>/artifacthub-repo.yml (from the identity).
#   release.sh artifacthub-push <pkg-dir> <git-remote> <message>
#       Commits the files of <pkg-dir> onto the remote's `artifacthub` branch (created when
#       absent) and pushes; a push refused because another release moved the branch is
#       rebased and retried after a random, growing wait, up to $RELEASE_PUSH_ATTEMPTS (8) times.
#
# KWCTL names kwctl (default: kwctl on PATH).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
identity_file="${PUBLISHING_ENV:-$root/.github/publishing.env}"
kwctl="${KWCTL:-kwctl}"
keys=(REGISTRY SOURCE_REPOSITORY AUTHOR_NAME AUTHOR_EMAIL ARTIFACTHUB_REPOSITORY_ID)

die() { echo "release.sh: $*" >&2; exit 1; }

# Reads the identity into the variables named by $keys.
load_identity() {
  [ -f "$identity_file" ] || die "$identity_file: no such file"
  local line key value
  for key in "${keys[@]}"; do printf -v "$key" '%s' ""; done
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in ''|'#'*) continue ;; esac
    [[ "$line" == *=* ]] || die "$identity_file: not a KEY=value line: $line"
    key="${line%%=*}"; value="${line#*=}"
    case " ${keys[*]} " in *" $key "*) ;; *) die "$identity_file: unknown key $key (known: ${keys[*]})" ;; esac
    printf -v "$key" '%s' "$value"
  done < "$identity_file"
  for key in "${keys[@]}"; do
    [ -n "${!key}" ] || die "$identity_file: $key is missing or empty"
  done
}

cmd_identity() {
  load_identity
  if [ "${1:-}" = "--release" ]; then
    local problems=()
    [[ "$AUTHOR_EMAIL" == *.invalid ]] \
      && problems+=("AUTHOR_EMAIL $AUTHOR_EMAIL is a placeholder (.invalid): set the maintainers' address")
    [[ "$REGISTRY" == *.invalid* || "$SOURCE_REPOSITORY" == *.invalid* ]] \
      && problems+=("REGISTRY or SOURCE_REPOSITORY names a host under .invalid")
    [[ "$ARTIFACTHUB_REPOSITORY_ID" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] \
      || problems+=("ARTIFACTHUB_REPOSITORY_ID $ARTIFACTHUB_REPOSITORY_ID is not a repository id (a lowercase UUID)")
    [[ "$ARTIFACTHUB_REPOSITORY_ID" =~ ^[0-]+$ ]] \
      && problems+=("ARTIFACTHUB_REPOSITORY_ID is the zero placeholder: set the id Artifact Hub gave the repository")
    [[ "$SOURCE_REPOSITORY" == https://github.com/* ]] \
      || problems+=("SOURCE_REPOSITORY $SOURCE_REPOSITORY is not a https://github.com/ repository")
    if [ "${#problems[@]}" -gt 0 ]; then
      echo "release.sh: $identity_file refuses a release:" >&2
      printf '  %s\n' "${problems[@]}" >&2
      exit 1
    fi
  fi
  local key
  for key in "${keys[@]}"; do printf '%s=%s\n' "$key" "${!key}"; done
}

# The value of one `  <key>: <value>` annotation line of a metadata.yml.
annotation() {
  sed -n "s/^  $2: *//p" "$1" | head -n 1 | sed -e 's/^"\(.*\)"$/\1/'
}

cmd_tag() {
  local tag="${1:?usage: release.sh tag <policy>/vX.Y.Z}"
  [[ "$tag" =~ ^([a-z0-9-]+-policy)/v([0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?)$ ]] \
    || die "tag $tag is not <policy>/vX.Y.Z"
  local policy="${BASH_REMATCH[1]}" version="${BASH_REMATCH[2]}"
  local meta="$root/policies/$policy/metadata.yml"
  [ -f "$meta" ] || die "tag $tag: no policy $policy (no policies/$policy/metadata.yml)"
  local have
  have="$(annotation "$meta" io.kubewarden.policy.version)"
  [ "$have" = "$version" ] \
    || die "policies/$policy/metadata.yml: io.kubewarden.policy.version is '$have', the tag says $version"
  have="$(annotation "$meta" com.github.release.tag)"
  [ "$have" = "$tag" ] \
    || die "policies/$policy/metadata.yml: com.github.release.tag is '$have', the tag is $tag"
  printf 'policy=%s\nversion=%s\nwasm=%s.wasm\n' "$policy" "$version" "${policy//-/_}"
}

cmd_push() {
  local wasm="${1:?usage: release.sh push <annotated.wasm> registry://<repository>:<tag> [options]}"
  local uri="${2:?usage: release.sh push <annotated.wasm> registry://<repository>:<tag> [options]}"
  shift 2
  [[ "$uri" =~ ^registry://(.+):([A-Za-z0-9_][A-Za-z0-9_.-]*)$ ]] \
    || die "push: $uri is not registry://<repository>:<tag>"
  local repository="${BASH_REMATCH[1]}"
  local out
  out="$("$kwctl" push -o json "$@" "$wasm" "$uri")" || die "push: kwctl push $uri failed"
  local ref
  ref="$(jq -er '.immutable_ref | strings' <<< "$out" 2> /dev/null)" \
    || die "push: kwctl push printed no immutable_ref: $out"
  [[ "$ref" =~ ^(.+)@sha256:[0-9a-f]{64}$ && "${BASH_REMATCH[1]}" == "$repository" ]] \
    || die "push: kwctl push returned $ref, not $repository@sha256:<digest>"
  printf '%s\n' "$ref"
}

# The README's `kwctl scaffold manifest` command (its lines joined over trailing backslashes
# are what `make publish-local` runs), as Artifact Hub's install text shows it.
scaffold_command() {
  awk '/^kwctl scaffold manifest /{on=1} on{print; if ($0 !~ /\\$/) exit}' "$root/policies/$1/README.md"
}

# Artifact Hub's install text: download the example settings released with the policy, then
# the README's command (kwctl's own text scaffolds `settings: {}`, which most policies refuse).
install_text() {
  local policy="$1" version="$2" command
  command="$(scaffold_command "$policy")"
  [ -n "$command" ] || die "policies/$policy/README.md has no \`kwctl scaffold manifest\` command"
  [ -f "$root/policies/$policy/example-settings.yml" ] || die "policies/$policy/example-settings.yml is missing"
  cat <<TEXT
Download the policy's example settings (the README's minimal configuration) and let
[kwctl](https://docs.kubewarden.io/howtos/install-kwctl) write a binding with them:
\`\`\`console
curl -fsSLO $SOURCE_REPOSITORY/releases/download/$policy%2Fv$version/example-settings.yml
$command
\`\`\`
The binding applies cluster-wide: add a namespaceSelector to scope it, and tune the settings
as the README explains.
TEXT
}

# Replaces the `install: |` block of an artifacthub-pkg.yml with the text of file $2.
set_install() {
  local pkg="$1" text="$2" tmp
  tmp="$(mktemp)"
  awk -v text="$text" '
    function emit(  line) { print "install: |"; while ((getline line < text) > 0) print "  " line; done = 1 }
    /^install:/ { emit(); skip = 1; next }
    skip && /^[^ ]/ { skip = 0 }
    !skip { print }
    END { if (!done) emit() }
  ' "$pkg" > "$tmp"
  mv "$tmp" "$pkg"
}

cmd_artifacthub() {
  local policy="${1:?usage: release.sh artifacthub <policy> <out-dir>}"
  local out="${2:?usage: release.sh artifacthub <policy> <out-dir>}"
  local dir="$root/policies/$policy"
  [ -f "$dir/metadata.yml" ] || die "artifacthub: no policy $policy"
  load_identity
  local version
  version="$(annotation "$dir/metadata.yml" io.kubewarden.policy.version)"
  [ -n "$version" ] || die "policies/$policy/metadata.yml: no io.kubewarden.policy.version"
  mkdir -p "$out/$policy/$version"
  "$kwctl" scaffold artifacthub --metadata-path "$dir/metadata.yml" \
    --questions-path "$dir/questions-ui.yml" --output "$out/$policy/$version/artifacthub-pkg.yml" \
    || die "artifacthub: kwctl scaffold artifacthub refused policies/$policy"
  install_text "$policy" "$version" > "$out/$policy/$version/install.txt"
  set_install "$out/$policy/$version/artifacthub-pkg.yml" "$out/$policy/$version/install.txt"
  rm "$out/$policy/$version/install.txt"
  cp "$dir/README.md" "$out/$policy/$version/README.md"
  cp "$root/artifacthub/artifacthub-repo.yml" "$out/artifacthub-repo.yml"
  echo "$out/$policy/$version"
}

cmd_artifacthub_push() {
  local pkg="${1:?usage: release.sh artifacthub-push <pkg-dir> <git-remote> <message>}"
  local remote="${2:?usage: release.sh artifacthub-push <pkg-dir> <git-remote> <message>}"
  local message="${3:?usage: release.sh artifacthub-push <pkg-dir> <git-remote> <message>}"
  pkg="$(cd "$pkg" && pwd)"
  local work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  git -C "$work" init -q
  git -C "$work" config user.name "${GIT_AUTHOR_NAME:-github-actions[bot]}"
  git -C "$work" config user.email "${GIT_AUTHOR_EMAIL:-41898282+github-actions[bot]@users.noreply.github.com}"
  git -C "$work" remote add origin "$remote"
  if git -C "$work" fetch -q origin artifacthub 2> /dev/null; then
    git -C "$work" checkout -q -b artifacthub FETCH_HEAD
  else
    git -C "$work" checkout -q --orphan artifacthub
  fi
  cp -R "$pkg/." "$work/"
  git -C "$work" add -A
  if git -C "$work" diff --cached --quiet; then
    echo "artifacthub-push: nothing to commit (the branch already holds these files)"
    return 0
  fi
  git -C "$work" commit -q -m "$message"
  local attempt=1 attempts="${RELEASE_PUSH_ATTEMPTS:-8}" ms
  until git -C "$work" push -q origin HEAD:refs/heads/artifacthub 2> "$work/.push-error"; do
    [ "$attempt" -lt "$attempts" ] || die "artifacthub-push: refused $attempts times: $(cat "$work/.push-error")"
    echo "artifacthub-push: attempt $attempt refused (the branch moved); rebasing and retrying" >&2
    # a random wait, doubling its range per attempt, so that racing pushers fall out of step
    ms=$((RANDOM % (1000 << attempt) + 1))
    sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
    git -C "$work" fetch -q origin artifacthub
    git -C "$work" rebase -q FETCH_HEAD \
      || die "artifacthub-push: cannot rebase onto the moved branch: $(git -C "$work" status --short)"
    attempt=$((attempt + 1))
  done
  echo "artifacthub-push: pushed after $attempt attempt(s)"
}

case "${1:-}" in
  identity) shift; cmd_identity "$@" ;;
  tag) shift; cmd_tag "$@" ;;
  push) shift; cmd_push "$@" ;;
  artifacthub) shift; cmd_artifacthub "$@" ;;
  artifacthub-push) shift; cmd_artifacthub_push "$@" ;;
  *) die "usage: release.sh identity [--release] | tag <tag> | push <wasm> <uri> [options] | artifacthub <policy> <out-dir> | artifacthub-push <pkg-dir> <remote> <message>" ;;
esac
