package io.steelyard.cli;

import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;

/**
 * How the write commands carry out their write: {@link InstanceStore#apply(InstanceWrite)}, the
 * operator's path every tool shares. {@link SteelyardCli} takes it in its constructor, so a test
 * can act between the read and the guarded write of a real store.
 */
@FunctionalInterface
interface WriteRunner {

  /** The production runner. */
  WriteRunner STORE = InstanceStore::apply;

  InstanceWrite.Result run(InstanceStore store, InstanceWrite write);
}
