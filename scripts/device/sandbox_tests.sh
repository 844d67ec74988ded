#!/usr/bin/env bash
# Runs the sandbox isolation and limit tests on the lent device machine (a cgroup v2-only host).
#
# Usage, from the repo root, through the device tool (the machine has no network):
#   bash scripts/device/sandbox_tests.sh probe   # what the host offers: cgroups, tools, overlayfs
#   bash scripts/device/sandbox_tests.sh test    # probe, install, then the tests
# It needs, carried as the ignored folder .devwhl/kwrl/ (`carry: [".devwhl/kwrl"]`):
#   - wheels of kwrl's runtime deps the image lacks (no torch; litellm and the cloud SDKs are
#     not imported by these tests), pytest, pytest-asyncio and hypothesis; made here with
#       pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#         --platform manylinux_2_28_x86_64 ... -d .devwhl/kwrl NAME==VERSION ...
#   - bubblewrap's .deb (`apt-get download bubblewrap`).
# PYTHONPATH=$PWD/scripts/device makes every Python process of the run import scripts/device/
# sitecustomize.py, which opts the sandbox out of refusing limits this host lacks (see there).
# Writes probe.txt, install.txt, pytest.log and junit.xml under $OUT.
set -u
MODE=${1:-test}
OUT=${OUT:-/tmp/kwrl-out}
mkdir -p "$OUT"
W=.devwhl/kwrl

probe() {
    echo "== kernel and user"; uname -r; id; pwd
    echo "== /proc/self/cgroup"; cat /proc/self/cgroup
    echo "== fs type of /sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup)"
    echo "== root controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1)"
    local own d
    own=$(sed -n 's/^0:://p' /proc/self/cgroup)
    d=/sys/fs/cgroup${own%/}
    echo "== own cgroup $own ($d)"
    for f in cgroup.controllers cgroup.subtree_control cgroup.type; do
        echo "$f: $(cat "$d/$f" 2>&1)"
    done
    echo "procs in own: $(wc -l < "$d/cgroup.procs")"
    ls "$d" | tr '\n' ' '; echo
    echo "== mounts"; grep -E 'cgroup|overlay| / |/tmp' /proc/self/mountinfo
    echo "== tools"; for t in unshare nsenter setpriv prlimit bwrap tar curl; do echo "$t: $(command -v $t)"; done
    unshare --version | head -1
    echo "== python"; python3 -c 'import sys, sysconfig; print(sys.executable, sys.prefix, sys.base_prefix, sys.version.split()[0], sysconfig.get_paths()["purelib"])'
    echo "== overlay"; grep -w overlay /proc/filesystems
    df -hT /tmp . | cat
}

setup_host() {
    set -e
    local tmp site
    tmp=$(mktemp -d)
    dpkg -x "$W"/bubblewrap_*.deb "$tmp"
    install -m 0755 "$tmp/usr/bin/bwrap" /usr/local/bin/bwrap
    bwrap --version
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --disable-pip-version-check "$W"/*.whl
    site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$PWD/src" > "$site/kwrl-src.pth"
    mkdir -p "$site/kwrl-0.1.0.dist-info"
    printf 'Metadata-Version: 2.1\nName: kwrl\nVersion: 0.1.0\n' > "$site/kwrl-0.1.0.dist-info/METADATA"
    python3 -c 'import kwrl.sandbox.local, harbor, pytest_asyncio; print("imports ok")'
    set +e
}

# Can this process make child cgroups and enable controllers for them? (probe mode only: it may
# move this cgroup's processes into a leaf, as a delegated cgroup's payload must.)
cgtry() {
    local own d p
    own=$(sed -n 's/^0:://p' /proc/self/cgroup)
    d=/sys/fs/cgroup${own%/}
    echo "== pid 1: $(cat /proc/1/cgroup) $(cat /proc/1/comm)"
    mkdir "$d/kwrl-probe" && echo "mkdir child: ok"
    echo "+pids +memory +cpu" > "$d/cgroup.subtree_control" && echo "enable in own: ok"
    echo "subtree_control: $(cat "$d/cgroup.subtree_control")"
    echo "child files: $(ls "$d/kwrl-probe" | tr '\n' ' ')"
    rmdir "$d/kwrl-probe"
    if ! grep -q pids "$d/cgroup.subtree_control"; then
        mkdir "$d/leaf"
        for p in $(cat "$d/cgroup.procs"); do echo "$p" > "$d/leaf/cgroup.procs" || echo "move $p failed"; done
        echo "+pids +memory +cpu" > "$d/cgroup.subtree_control" && echo "enable after leaf move: ok"
    fi
    mkdir "$d/kt"
    sh -c "echo \$\$ > $d/kt/cgroup.procs; exec sleep 100" &
    p=$!
    until grep -q . "$d/kt/cgroup.procs"; do :; done
    echo 1 > "$d/kt/cgroup.kill" && echo "cgroup.kill: written"
    wait "$p"; echo "sleep ended: $?"
    cat "$d/kt/cgroup.events"; ls "$d/kt" | tr '\n' ' '; echo
    rmdir "$d/kt"
}

probe 2>&1 | tee "$OUT/probe.txt"
if [ "$MODE" = probe ]; then
    cgtry 2>&1 | tee -a "$OUT/probe.txt"
    (setup_host && bwrap --ro-bind / / --unshare-pid --unshare-net --dev /dev true && echo "bwrap: ok") 2>&1 | tee -a "$OUT/probe.txt"
    t=$(mktemp -d); mkdir -p "$t"/{l,u,w,m}; echo hi > "$t/l/f"
    unshare -m sh -c "mount -t tmpfs x $t/u && mkdir $t/u/u $t/u/w && mount -t overlay overlay -o lowerdir=$t/l,upperdir=$t/u/u,workdir=$t/u/w $t/m && cat $t/m/f && echo overlay: ok" 2>&1 | tee -a "$OUT/probe.txt"
    exit 0
fi

set -o pipefail
setup_host 2>&1 | tee "$OUT/install.txt" || exit 1
{
    echo "== parents (read only)"
    echo "root subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
    own=$(sed -n 's/^0:://p' /proc/self/cgroup); d=/sys/fs/cgroup${own%/}
    echo "parent $(dirname "$own") controllers: $(cat "$(dirname "$d")/cgroup.controllers")"
    echo "== kwrl, as started: $(python3 -c 'from kwrl.sandbox import cgroups; print(cgroups.support().describe())')"
    python3 -c 'from kwrl.sandbox import cgroups as c; c.require_limits(c.Limits(memory_mb=256, pids=512), allow_missing=False)' 2>&1 | tail -1
    # Act as the delegating manager (what `systemd-run --scope -p Delegate=yes` does): this
    # command's processes go into a leaf (init), the delegated controllers are enabled for the
    # children, and pytest runs alone in its own child (kwrl-tests), where kwrl moves itself into
    # a leaf and nests the trials beside it.
    mkdir -p "$d/init" "$d/kwrl-tests"
    for _ in 1 2 3; do
        for p in $(cat "$d/cgroup.procs"); do echo "$p" > "$d/init/cgroup.procs" 2>/dev/null; done
    done
    echo "left in own after the move: $(wc -l < "$d/cgroup.procs")"
    for c in $(cat "$d/cgroup.controllers"); do echo "+$c" > "$d/cgroup.subtree_control"; done
    echo "own subtree_control: $(cat "$d/cgroup.subtree_control")"
    echo "== kwrl, in kwrl-tests: $(sh -c "echo \$\$ > $d/kwrl-tests/cgroup.procs; exec python3 -c 'from kwrl.sandbox import cgroups; print(cgroups.support().describe())'")"
} 2>&1 | tee -a "$OUT/probe.txt"
tests=(tests/unit/sandbox tests/integration/test_sandbox_isolation.py tests/integration/test_sandbox_trial.py)
[ -f tests/integration/test_adversarial.py ] && tests+=(tests/integration/test_adversarial.py)
echo "== command: python3 -m pytest -q -rs -p no:cacheprovider -p no:benchmark ${tests[*]}" | tee -a "$OUT/probe.txt"
own=$(sed -n 's/^0:://p' /proc/self/cgroup); own=${own%/init}
export PYTHONPATH="$PWD/scripts/device" PYTHONUNBUFFERED=1
timeout "${PYTEST_TIMEOUT:-420}" sh -c 'echo $$ > "$0/kwrl-tests/cgroup.procs" && exec "$@"' \
    "/sys/fs/cgroup$own" python3 -m pytest -q -rs -p no:cacheprovider -p no:benchmark \
    --junitxml="$OUT/junit.xml" "${tests[@]}" 2>&1 | tee "$OUT/pytest.log"
rc=$?
echo "pytest exit: $rc" | tee -a "$OUT/pytest.log"
# The trial dirs of the adversarial suite, without the big files, for a failure's evidence.
tar czf "$OUT/trials.tgz" --exclude="*.bin" --exclude="big*" -C / \
    $(cd / && ls -d tmp/pytest-of-root/pytest-*/adv*/out/trials 2>/dev/null) 2>/dev/null
exit $rc
