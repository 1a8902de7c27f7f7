package io.steelyard.cli;

import io.steelyard.registry.Validation;
import io.steelyard.registry.admin.InstanceStore;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * What every subcommand shares: the root's global options, and input checks that turn bad
 * input into a usage error (exit 2) before anything talks to etcd.
 */
abstract class CliCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  final SteelyardCli cli() {
    return (SteelyardCli) spec.root().userObject();
  }

  final PrintWriter out() {
    return cli().out();
  }

  final PrintWriter err() {
    return cli().err();
  }

  final String checkService(String service) {
    return Usage.check(spec, () -> Validation.checkServiceName(service));
  }

  final String checkAddress(String address) {
    return Usage.check(spec, () -> Validation.checkAddress(address));
  }

  /** Checks an instance's SERVICE and ADDRESS arguments. */
  final void checkInstance(InstanceArgs instance) {
    checkService(instance.service);
    checkAddress(instance.address);
  }

  final int checkWeight(long weight) {
    return Usage.check(spec, () -> Validation.checkWeight(weight));
  }

  /**
   * Checks the global options, then connects. Call after checking this command's own
   * arguments: nothing reaches etcd before every input has been checked.
   */
  final InstanceStore store() {
    SteelyardCli cli = cli();
    return cli.store(cli.settings(spec));
  }

  /** Checks the global options without contacting etcd; bad ones are a usage error of this command. */
  final ConnectionSettings settings() {
    return cli().settings(spec);
  }
}
