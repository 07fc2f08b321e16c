#!/usr/bin/python3
"""The mutation check: plants each mutant of scripts/mutants/*.mutant (one
realistic bug in src/) in a scratch copy of the tree, builds what the C++
suites need, runs them, and reports which tests killed it on which SIMD
targets. Every mutant must be killed: a survivor is a missing test.

A mutant file holds `key: value` lines:
  breaks:  what the bug breaks (required)
  file:    the source file, relative to the repository root
  find:    a Python regular expression anchored on the code that expresses
           the behaviour (a formula term, a rounding step, a loop bound)
  replace: its replacement (re.sub syntax: \\1 ...)
  count:   how many matches the anchor must have (default 1); any other
           number fails loudly, so a refactored file never silently runs
           the unmutated code
  ci:      yes for the fixed subset CI runs (--ci)

Usage: ./run mutants [--ci] [--jobs N] [--first-kill] [NAME ...]
  --ci          the `ci: yes` mutants against the core and AscendC suites,
                stopping at the first suite that kills each (what CI runs)
  --jobs N      scratch trees building and testing at once (default: 2 with
                ccache on 2 cores or more, else 1; --ci: 1)
  --first-kill  stop each mutant at the first suite that kills it
Environment: LNGRAD_MUTANTS_DIR (default build-mutants/ in the tree).
Exit status 0 when every mutant was killed; 1 for a survivor, an anchor that
did not match, a mutant that did not build, or a failing unmutated suite.
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MUTANTS = os.path.join(ROOT, "scripts", "mutants")

# The C++ suites, in the order they run: (name, cmake target, executable in
# the build folder, seconds allowed, run by --ci). The `large` test (8.5 GiB)
# and the Python/CLI suites (thin layers over the same library) are left out.
SUITES = [
    ("core", "lngrad_tests", "tests/lngrad_tests", 600, True),
    ("ascendc", "lngrad_ascendc_tests", "tests/ascendc/lngrad_ascendc_tests", 300, True),
    ("hardening", "lngrad_hardening_tests", "tests/hardening/lngrad_hardening_tests", 900, False),
    ("concurrency", "lngrad_hardening_concurrency", "tests/hardening/lngrad_hardening_concurrency", 600, False),
    ("fuzz-replay", "lngrad_replay_fuzz_validation", "tests/hardening/lngrad_replay_fuzz_validation", 300, False),
    ("ascendc-replay", "lngrad_replay_fuzz_ascendc", "tests/hardening/lngrad_replay_fuzz_ascendc", 300, False),
]


class Mutant:
    def __init__(self, path):
        self.name = os.path.basename(path)[: -len(".mutant")]
        fields = {}
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip() or line.startswith("#"):
                    continue
                key, sep, value = line.rstrip("\n").partition(": ")
                if not sep:
                    sys.exit(f"{path}:{n}: expected 'key: value'")
                fields[key] = value
        for key in ("breaks", "file", "find", "replace"):
            if key not in fields:
                sys.exit(f"{path}: no '{key}:' line")
        self.breaks = fields["breaks"]
        self.file = fields["file"]
        self.find = re.compile(fields["find"])
        self.replace = fields["replace"]
        self.count = int(fields.get("count", "1"))
        self.ci = fields.get("ci", "no") == "yes"

    def apply(self, text):
        """The mutated text, or raises ValueError when the anchor does not
        match exactly `count` times."""
        found = len(self.find.findall(text))
        if found != self.count:
            raise ValueError(f"anchor matched {found} times in {self.file}, expected {self.count}: "
                             f"{self.find.pattern}")
        return self.find.sub(self.replace, text)


def run(cmd, cwd, log, timeout=None, env=None):
    with open(log, "w") as out:
        try:
            return subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                  env=env).returncode
        except subprocess.TimeoutExpired:
            return "timeout"


def tracked_files():
    """The tree's files: git's tracked and untracked-not-ignored ones, or,
    outside a git checkout, every file but build and install folders."""
    git = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True)
    if git.returncode == 0:
        return [f for f in git.stdout.decode().split("\0") if f and os.path.isfile(os.path.join(ROOT, f))]
    files = []
    for d, subdirs, names in os.walk(ROOT):
        subdirs[:] = [s for s in subdirs if not s.startswith((".git", "build", "install", "__pycache__"))]
        files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
    return files


class Tree:
    """A scratch copy of the repository with its own build folder. Files are
    copied only where they differ, so an unchanged tree rebuilds nothing."""

    def __init__(self, base, index, jobs, ccache, one_target):
        self.dir = os.path.join(base, f"tree{index}")
        self.one_target = one_target
        self.build = os.path.join(self.dir, "build")
        self.logs = os.path.join(base, "logs")
        self.jobs = jobs
        self.ccache = ccache
        os.makedirs(self.logs, exist_ok=True)

    def sync(self, files):
        for f in files:
            src, dst = os.path.join(ROOT, f), os.path.join(self.dir, f)
            with open(src, "rb") as a:
                data = a.read()
            if os.path.exists(dst):
                with open(dst, "rb") as b:
                    if b.read() == data:
                        continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)

    def configure(self):
        cmd = ["cmake", "-S", self.dir, "-B", self.build, "-DCMAKE_BUILD_TYPE=Release",
               "-DPython_EXECUTABLE=/usr/bin/python3", "-DLNGRAD_BUILD_TESTS=ON", "-DLNGRAD_BUILD_CLI=OFF",
               "-DLNGRAD_BUILD_PYTHON=OFF", "-DLNGRAD_BUILD_BENCH=OFF", "-DLNGRAD_BUILD_FUZZERS=OFF",
               "-DLNGRAD_SANITIZE="]
        if self.ccache:
            cmd.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        # --ci: the kernels for the compiler's baseline SIMD target only (a
        # sixth of their compile); its mutants are all outside the kernels.
        cmd.append("-DCMAKE_CXX_FLAGS=" + ("-DHWY_COMPILE_ONLY_STATIC=1" if self.one_target else ""))
        log = os.path.join(self.logs, f"{os.path.basename(self.dir)}-configure.log")
        if run(cmd, self.dir, log) != 0:
            sys.exit(f"mutants: cmake failed, see {log}")

    def build_targets(self, targets, log):
        return run(["cmake", "--build", self.build, "-j", str(self.jobs), "--target", *targets], self.dir, log) == 0


# ---- Reading gtest's output. --------------------------------------------------

FAILED = re.compile(r"^\[  FAILED  \] (\S+?),?(?: \(|$| where)", re.M)
RUN = re.compile(r"^\[ RUN      \] (\S+)", re.M)
ENDED = re.compile(r"^\[ +(?:OK|FAILED|SKIPPED) +\] (\S+?),? ", re.M)


def killing_tests(output, status):
    """Names of the tests that failed, crashed or hung in one executable's run."""
    failed = set(FAILED.findall(output))
    failed.discard("TEST")  # "[  FAILED  ] TEST" is not a test name
    if status != 0:
        started = RUN.findall(output)
        ended = set(ENDED.findall(output))
        unfinished = [t for t in started if t not in ended]
        how = "timeout" if status == "timeout" else "crash"
        if unfinished:
            failed.add(f"{unfinished[-1]} ({how})")
        elif not failed:
            failed.add(f"<{how} outside any test>")
    return failed


def split_test(name, targets):
    """(test, target) from a gtest name: Targets/PerTarget.X/AVX3 ->
    (PerTarget.X, AVX3); NonFinite params end in _<target>; '-' for a test
    that runs on the dispatched target only."""
    note = ""
    if name.endswith(")"):
        name, _, note = name.partition(" (")
        note = " (" + note
    if "/" in name.split(".")[0]:
        name = name.split("/", 1)[1]
    suite, _, test = name.partition(".")
    test, _, param = test.partition("/")
    target = "-"
    for t in sorted(targets, key=len, reverse=True):
        if param == t or param.endswith("_" + t):
            target = t
            break
    return f"{suite}.{test}{note}", target


def summarize(kills, targets, limit=None):
    """'Test [targets]' items, most targets first."""
    by_test = {}
    for suite, names in kills.items():
        for n in names:
            test, target = split_test(n, targets)
            by_test.setdefault(test, set()).add(target)
    items = []
    for test, ts in sorted(by_test.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if ts == set(targets):
            where = "all"
        elif ts == {"-"}:
            where = "-"
        else:
            where = " ".join(t for t in list(targets) + ["-"] if t in ts)
        items.append(f"{test} [{where}]")
    if limit is not None and len(items) > limit:
        items = items[:limit] + [f"+{len(items) - limit} more"]
    return items


# ---- The check. ------------------------------------------------------------------


def run_suites(tree, tag, suites, first_kill):
    """{suite: set of killing tests}, and an error string if a build failed.
    Each suite's executable is built just before it runs."""
    kills = {}
    for suite, target, exe, timeout, _ in suites:
        log = os.path.join(tree.logs, f"{tag}-build-{suite}.log")
        if not tree.build_targets([target], log):
            return kills, f"build failed ({log})"
        # A crash or hang ends the executable: run it again without the tests
        # that did, to see which others fail (a few times at most).
        failed, skip = set(), []
        for attempt in range(4):
            out_log = os.path.join(tree.logs, f"{tag}-{suite}{'-' + str(attempt) if attempt else ''}.log")
            cmd = [os.path.join(tree.build, exe), "--gtest_color=no"]
            if skip:
                cmd.append("--gtest_filter=-" + ":".join(skip))
            status = run(cmd, tree.build, out_log, timeout=timeout)
            with open(out_log, errors="replace") as f:
                output = f.read()
            found = killing_tests(output, status)
            failed |= found
            ended = [t.partition(" (")[0] for t in found if t.endswith(("(crash)", "(timeout)"))]
            if status == 0 or not ended or ended[0].startswith("<") or (first_kill and failed):
                break
            skip += ended
        if failed:
            kills[suite] = failed
            if first_kill:
                break
    return kills, None


def target_names(tree):
    out = subprocess.run([os.path.join(tree.build, "tests/lngrad_tests"), "--gtest_list_tests",
                          "--gtest_filter=Targets/PerTarget.OneRowAndHEqualsOne/*"],
                         capture_output=True, text=True).stdout
    return re.findall(r'GetParam\(\) = "([^"]+)"', out)


def main():
    ap = argparse.ArgumentParser(description="lngrad's mutation check", usage="./run mutants [options] [NAME ...]")
    ap.add_argument("names", nargs="*", help="mutants to run (default: all)")
    ap.add_argument("--ci", action="store_true", help="the fixed subset CI runs, first kill only")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--first-kill", action="store_true")
    args = ap.parse_args()

    mutants = [Mutant(p) for p in sorted(glob.glob(os.path.join(MUTANTS, "*.mutant")))]
    every = list(mutants)
    known = {m.name for m in mutants}
    for n in args.names:
        if n not in known:
            sys.exit(f"mutants: no mutant '{n}'; known: {', '.join(sorted(known))}")
    if args.names:
        mutants = [m for m in mutants if m.name in args.names]
    if args.ci:
        mutants = [m for m in mutants if m.ci]
        for m in mutants:
            if m.file.startswith("src/kernels/"):
                sys.exit(f"mutants: {m.name}: --ci builds the kernels for one target; no kernel mutant there")
    first_kill = args.first_kill or args.ci
    suites = [s for s in SUITES if s[4] or not args.ci]

    # Every anchor first, of every mutant: a stale one fails before anything
    # is built, whichever mutants run.
    broken = []
    for m in every:
        try:
            with open(os.path.join(ROOT, m.file)) as f:
                m.apply(f.read())
        except (OSError, ValueError) as e:
            broken.append(f"{m.name}: {e}")
    if broken:
        print("mutants: anchors that do not match (update the mutant to the code):", *broken, sep="\n  ",
              file=sys.stderr)
        return 1

    cores = os.cpu_count() or 1
    ccache = shutil.which("ccache") is not None and os.environ.get("CCACHE_DISABLE", "") in ("", "0")
    # A second tree pays off when it builds from the cache and the kernels'
    # long compiles are many (each takes one core).
    workers = max(1, min(args.jobs or (2 if cores >= 2 and ccache and not args.ci else 1), len(mutants)))
    if ccache and not subprocess.run(["ccache", "-k", "base_dir"], capture_output=True, text=True).stdout.strip():
        # Relative paths in the cache key, so the scratch trees share objects.
        os.environ["CCACHE_BASEDIR"] = ROOT
    base = os.environ.get("LNGRAD_MUTANTS_DIR", os.path.join(ROOT, "build-mutants"))
    files = tracked_files()
    start = time.time()

    # The unmutated tree must pass every suite (else every mutant looks killed).
    if args.ci:
        base = os.path.join(base, "ci")  # its own build: other compile flags
    trees = [Tree(base, i, max(1, cores // workers), ccache, args.ci) for i in range(workers)]
    trees[0].jobs = cores
    for t in trees:
        t.sync(files)
        t.configure()
    print(f"mutants: {len(mutants)} mutants, {workers} tree(s) in {base}{', ccache' if ccache else ''}",
          file=sys.stderr)
    kills, error = run_suites(trees[0], "unmutated", suites, False)
    if error or kills:
        print(f"mutants: the unmutated tree does not pass: {error or summarize(kills, [])}", file=sys.stderr)
        return 1
    for t in trees[1:]:
        log = os.path.join(t.logs, f"{os.path.basename(t.dir)}-unmutated-build.log")
        if not t.build_targets([s[1] for s in suites], log):
            print(f"mutants: build failed, see {log}", file=sys.stderr)
            return 1
    for t in trees:
        t.jobs = max(1, cores // workers)
    targets = target_names(trees[0])
    print(f"mutants: unmutated suites pass on {' '.join(targets)} ({time.time() - start:.0f} s)", file=sys.stderr)

    # The slow compiles (the kernels: every SIMD target) first, for balance.
    queue = sorted(mutants, key=lambda m: (not m.file.startswith("src/kernels/"), m.name))
    lock = threading.Lock()
    free = list(trees)
    results = {}

    def one(m):
        with lock:
            tree = free.pop()
        t0 = time.time()
        path = os.path.join(tree.dir, m.file)
        with open(path) as f:
            original = f.read()
        try:
            with open(path, "w") as f:
                f.write(m.apply(original))
            kills, error = run_suites(tree, m.name, suites, first_kill)
        finally:
            with open(path, "w") as f:
                f.write(original)
            with lock:
                free.append(tree)
        results[m.name] = (kills, error, time.time() - t0)
        verdict = "BUILD FAILED" if error else ("killed" if kills else "SURVIVED")
        print(f"mutants: {m.name}: {verdict} ({time.time() - t0:.0f} s)", file=sys.stderr)

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for f in [pool.submit(one, m) for m in queue]:
            f.result()
    # Leave every tree built unmutated for the next run.
    for t in trees:
        t.build_targets([s[1] for s in suites], os.path.join(t.logs, f"{os.path.basename(t.dir)}-restore.log"))

    report = os.path.join(base, "report.md")
    bad = 0
    width = max(len(m.name) for m in mutants)
    lines = [f"{'mutant':<{width}}  result    tests  killed by: test [targets] ('-': dispatched target only)"]
    full = ["# Mutation check", "", f"Targets: {' '.join(targets)}", ""]
    for m in mutants:
        kills, error, seconds = results[m.name]
        n = len({split_test(t, targets)[0] for s in kills.values() for t in s})
        result = "BUILD-ERR" if error else ("killed" if kills else "SURVIVED")
        bad += result != "killed"
        shown = "; ".join(summarize(kills, targets, 3)) if kills else (error or "no test failed")
        lines.append(f"{m.name:<{width}}  {result:<8}  {n:>5}  {shown}")
        full += [f"## {m.name}: {result} ({seconds:.0f} s)", "", f"Breaks: {m.breaks}", ""]
        for suite, names in kills.items():
            full.append(f"- {suite}: " + "; ".join(summarize({suite: names}, targets)))
        full.append("")
    with open(report, "w") as f:
        f.write("\n".join(full))
    print("\n".join(lines))
    print(f"\n{len(mutants) - bad} of {len(mutants)} mutants killed in {time.time() - start:.0f} s; "
          f"every killing test in {report}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
