# Sourced by ./run and the CI jobs: installs the Debian packages among its
# arguments that are not installed yet (one apt-get for all), and nothing
# when all are there. A package of another architecture (NAME:arm64) adds
# that architecture to dpkg first if it is not there yet.
#   install_missing WHO [--no-install-recommends] PACKAGE...
install_missing() {
  local who=$1 opts=() missing=() arch
  shift
  if [[ "${1:-}" == --no-install-recommends ]]; then
    opts+=("$1")
    shift
  fi
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    for pkg in "${missing[@]}"; do
      [[ "$pkg" == *:* ]] || continue
      arch=${pkg##*:}
      if [[ "$arch" != "$(dpkg --print-architecture)" ]] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
        echo "$who: adding the $arch architecture to dpkg" >&2
        dpkg --add-architecture "$arch"
      fi
    done
    echo "$who: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${opts[@]}" "${missing[@]}" >/dev/null
  fi
}

# The packages of the named groups of scripts/debian-packages.txt, one a line.
#   group_packages GROUP...
group_packages() {
  local list
  list="$(dirname "${BASH_SOURCE[0]}")/debian-packages.txt"
  for group in "$@"; do
    while read -r g pkg _; do
      [[ "$g" == "$group" ]] && echo "$pkg"
    done < <(grep -v '^#' "$list")
  done
}
