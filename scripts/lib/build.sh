# shellcheck shell=bash
# Shared by every launcher in bin/ and by scripts/demo: build the runnable jars when they are
# missing or older than the sources, in one quiet Maven run each, under one lock (so launchers
# started together build once and all start).
#
#   examples/target/examples-*-all.jar         the greeter server and client (shaded)
#   testkit/target/testkit-*.jar + classpath.txt   EtcdLauncher, for scripts/demo
#   cli/target/steelyard-cli.jar                   bin/steelyard (shaded)
#   xds-server/target/steelyard-xds.jar            bin/steelyard-xds (shaded)
#   examples/spring-greeter/target/spring-greeter-*.jar   bin/spring-greeter (Spring Boot jar)
#   examples/spring-cloud-http/target/spring-cloud-http-*.jar   bin/spring-cloud-greeter
#   examples/quarkus-greeter/target/quarkus-app/quarkus-run.jar   bin/quarkus-greeter (Quarkus)

STEELYARD_VERSION="0.1.0-SNAPSHOT"

steelyard_root() {
  (cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
}

steelyard_examples_jar() {
  echo "$(steelyard_root)/examples/target/examples-${STEELYARD_VERSION}-all.jar"
}

steelyard_cli_jar() {
  echo "$(steelyard_root)/cli/target/steelyard-cli.jar"
}

steelyard_xds_jar() {
  echo "$(steelyard_root)/xds-server/target/steelyard-xds.jar"
}

steelyard_testkit_classpath() {
  local root
  root="$(steelyard_root)"
  echo "$root/testkit/target/testkit-${STEELYARD_VERSION}.jar:$(cat "$root/testkit/target/classpath.txt")"
}

# True when $1 is missing or any pom or main source/resource is newer than it.
steelyard_stale() {
  local artifact="$1" root
  root="$(steelyard_root)"
  [[ -f "$artifact" ]] || return 0
  [[ -n "$(find "$root" \( -name target -o -name .git -o -name node_modules \) -prune -o \
      \( -path '*/src/main/*' -o -name pom.xml \) -type f -newer "$artifact" -print -quit 2>/dev/null)" ]]
}

# Runs "$@" holding the build lock (target/build.lock under the checkout), so launchers started
# together run one Maven build: the first builds, the others wait for it and then find the jars
# fresh. Each caller checks staleness again once it holds the lock. The lock lives on a file
# descriptor of a subshell only, so the program a launcher execs afterwards does not hold it.
# Without flock(1) (macOS) the build runs unlocked.
steelyard_locked() {
  local root lock
  root="$(steelyard_root)"
  if ! command -v flock >/dev/null 2>&1; then
    "$@"
    return
  fi
  mkdir -p "$root/target"
  lock="$root/target/build.lock"
  (
    if ! flock -n 9; then
      echo "steelyard: waiting for another launcher's build ($lock)..." >&2
      flock 9
    fi
    "$@"
  ) 9>"$lock"
}

# Builds the examples jar, the CLI jar and the testkit launcher's classpath when stale. Output
# goes to stderr.
steelyard_build() {
  steelyard_fresh || steelyard_locked steelyard_build_unlocked
}

steelyard_fresh() {
  local root
  root="$(steelyard_root)"
  ! steelyard_stale "$(steelyard_examples_jar)" \
    && ! steelyard_stale "$(steelyard_cli_jar)" \
    && ! steelyard_stale "$root/testkit/target/classpath.txt"
}

steelyard_build_unlocked() {
  local root
  root="$(steelyard_root)"
  if steelyard_fresh; then
    return 0 # built by the launcher that held the lock before us
  fi
  echo "steelyard: building the examples, the CLI and the testkit (./mvnw package, tests skipped)..." >&2
  steelyard_mvn_package "$root" || return 1
  # build-classpath leaves an unchanged file alone; touch it so it does not look stale forever.
  touch "$root/testkit/target/classpath.txt"
}

steelyard_mvn_package() {
  local root="$1"
  local offline=()
  # Offline first: a warm ~/.m2 needs no network; fall back to online for a fresh machine.
  if [[ -d "${HOME}/.m2/repository/io/grpc" ]]; then offline=(-o); fi
  if ! (cd "$root" && ./mvnw -B -q "${offline[@]}" -pl examples,cli,testkit -am -DskipTests \
      package dependency:build-classpath -Dmdep.includeScope=runtime \
      -Dmdep.outputFile=target/classpath.txt >&2); then
    if [[ ${#offline[@]} -gt 0 ]] && (cd "$root" && ./mvnw -B -q -pl examples,cli,testkit -am -DskipTests \
        package dependency:build-classpath -Dmdep.includeScope=runtime \
        -Dmdep.outputFile=target/classpath.txt >&2); then
      return 0
    fi
    echo "steelyard: build failed; run ./mvnw -B -pl examples,cli,testkit -am -DskipTests package to see why" >&2
    return 1
  fi
}

# Builds one module's runnable jar when it is missing or stale: ./mvnw package -pl MODULE -am
# (tests skipped) under the build lock, offline first when ~/.m2/repository/MARKER shows the
# dependencies are there, online if that fails. The jar is touched afterwards: a build with
# nothing to redo may leave it older than a source it does not depend on, which would make it
# look stale forever. Output goes to stderr.
#   steelyard_build_module "$(steelyard_xds_jar)" xds-server io/envoyproxy
steelyard_build_module() {
  steelyard_stale "$1" || return 0
  steelyard_locked steelyard_build_module_unlocked "$@"
}

steelyard_build_module_unlocked() {
  local jar="$1" module="$2" marker="$3" root offline=()
  root="$(steelyard_root)"
  steelyard_stale "$jar" || return 0 # built by the launcher that held the lock before us
  echo "steelyard: building $module (./mvnw package, tests skipped)..." >&2
  if [[ -d "${HOME}/.m2/repository/$marker" ]]; then offline=(-o); fi
  if (cd "$root" && ./mvnw -B -q "${offline[@]}" -pl "$module" -am -DskipTests package >&2) \
      || { [[ ${#offline[@]} -gt 0 ]] \
           && (cd "$root" && ./mvnw -B -q -pl "$module" -am -DskipTests package >&2); }; then
    touch "$jar"
    return 0
  fi
  echo "steelyard: build failed; run ./mvnw -B -pl $module -am -DskipTests package to see why" >&2
  return 1
}

steelyard_spring_greeter_jar() {
  echo "$(steelyard_root)/examples/spring-greeter/target/spring-greeter-${STEELYARD_VERSION}.jar"
}

steelyard_spring_cloud_http_jar() {
  echo "$(steelyard_root)/examples/spring-cloud-http/target/spring-cloud-http-${STEELYARD_VERSION}.jar"
}

steelyard_quarkus_greeter_jar() {
  echo "$(steelyard_root)/examples/quarkus-greeter/target/quarkus-app/quarkus-run.jar"
}

# Builds the Quarkus greeter (target/quarkus-app) when stale, under the build lock.
steelyard_build_quarkus_greeter() {
  steelyard_build_module "$(steelyard_quarkus_greeter_jar)" examples/quarkus-greeter io/quarkus/quarkus-grpc
}
