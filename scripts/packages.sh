# Sourced by ./run and the CI jobs: installs the Debian packages among its
# arguments that are not installed yet (one apt-get for all), and nothing
# when all are there.
#   install_missing WHO [--no-install-recommends] PACKAGE...
install_missing() {
  local who=$1 opts=() missing=()
  shift
  if [[ "${1:-}" == --no-install-recommends ]]; then
    opts+=("$1")
    shift
  fi
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    echo "$who: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${opts[@]}" "${missing[@]}" >/dev/null
  fi
}
