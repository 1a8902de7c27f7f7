package io.steelyard.cli;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;

/** Validated connection options: where etcd is and which key prefix to use. */
record ConnectionSettings(EtcdConnection connection, KeyLayout layout) {}
