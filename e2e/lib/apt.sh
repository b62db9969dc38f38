# shellcheck shell=bash
# e2e/lib/apt.sh — installing missing Debian packages, sourced by e2e/local and
# e2e/kind/offline.sh. The caller defines say, die and BIN (where apt.log goes) and
# sources e2e/lib/progress.sh.

APT_UPDATED=0
# apt_install PKG... installs Debian packages that are missing. Needs root: this
# project's machines run as root; elsewhere we say what to install instead of sudo-ing.
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    die "missing Debian packages: ${missing[*]} (not root: run 'sudo apt-get install -y --no-install-recommends ${missing[*]}')"
  fi
  command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get on this machine"
  # A fresh machine's package lists may be empty; update once per run.
  mkdir -p "$BIN"
  local log="$BIN/apt.log"
  if [ "$APT_UPDATED" -eq 0 ]; then
    say "apt-get update"
    progress_run "updating the package lists (apt-get update)" "~10 s" "nothing to do" "$log" \
      env DEBIAN_FRONTEND=noninteractive apt-get update -q || { tail -n 5 "$log" >&2; die "apt-get update failed (log: $log)"; }
    APT_UPDATED=1
  fi
  say "installing ${missing[*]} (apt-get; log $log)"
  progress_run "installing Debian packages" "~1 min" "nothing to do" "$log" \
    env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
    || { tail -n 10 "$log" >&2; die "apt-get install ${missing[*]} failed (log: $log)"; }
}
