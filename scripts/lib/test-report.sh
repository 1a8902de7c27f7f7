# shellcheck shell=bash
# Reads the surefire and failsafe XML reports a build left under */target and prints what they
# say: the slowest test classes and the test count. Sourced by scripts/test and scripts/flake.
# Every pipeline reads its input to the end (awk 'NR <= n', not head), so none dies of SIGPIPE
# under `set -o pipefail`.

# The N (default 15) slowest test classes of every report under the current directory, slowest
# first, as "seconds  tests  class".
steelyard_slowest_classes() {
  local n=${1:-15}
  find . -path '*/target/*-reports/TEST-*.xml' -print0 2>/dev/null |
    xargs -0 -r sed -n 's/^<testsuite \(.*\)>$/\1/p;s/^<testsuite \(.*\)\/>$/\1/p' |
    awk '{
      name = ""; time = 0; tests = 0
      if (match($0, / name="[^"]*"/)) name = substr($0, RSTART + 7, RLENGTH - 8)
      if (match($0, / time="[^"]*"/)) { t = substr($0, RSTART + 7, RLENGTH - 8); gsub(",", "", t); time = t + 0 }
      if (match($0, / tests="[^"]*"/)) tests = substr($0, RSTART + 8, RLENGTH - 9) + 0
      if (name != "") printf "%9.1f s %5d  %s\n", time, tests, name
    }' | sort -rn | awk -v n="$n" 'NR <= n'
}

# "tests=T failures=F errors=E skipped=S" summed over every report under the current directory.
steelyard_test_totals() {
  find . -path '*/target/*-reports/TEST-*.xml' -print0 2>/dev/null |
    xargs -0 -r sed -n 's/^<testsuite \(.*\)\/\{0,1\}>$/\1/p' |
    awk '{
      for (i = 1; i <= 4; i++) {
        key = (i == 1 ? "tests" : i == 2 ? "failures" : i == 3 ? "errors" : "skipped")
        if (match($0, " " key "=\"[^\"]*\"")) sum[key] += substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 4)
      }
    } END { printf "tests=%d failures=%d errors=%d skipped=%d\n", sum["tests"], sum["failures"], sum["errors"], sum["skipped"] }'
}
