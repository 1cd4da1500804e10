# Sourced by scripts/run and scripts/test: make .venv and install $1 into it,
# skipping pip when the requirement files have not changed since last time.
set -euo pipefail
requirements="$1"
python_bin="${PYTHON:-python3}"
if ! "$python_bin" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "Eunice needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$python_bin" -m venv .venv
stamp=".venv/.installed-$(basename "$requirements")"
digest="$(cat requirements*.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
    echo "$digest" > "$stamp"
fi
