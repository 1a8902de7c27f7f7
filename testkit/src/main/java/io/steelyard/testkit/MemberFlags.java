package io.steelyard.testkit;

import java.util.ArrayList;
import java.util.List;

/** The flags an {@link EtcdCluster} adds to every member's command line, after the user's own. */
final class MemberFlags {

  private MemberFlags() {}

  /**
   * {@code extraArgs}, then {@code --auth-token} for JWTs when {@code jwtTokens} is set, then
   * {@code --quota-backend-bytes} when it is not the default (etcd takes a flag's last occurrence,
   * so these come after the backends' own defaults).
   */
  static List<String> of(List<String> extraArgs, String jwtTokens, long quotaBackendBytes) {
    List<String> args = new ArrayList<>(extraArgs);
    if (jwtTokens != null) {
      args.addAll(List.of("--auth-token", jwtTokens));
    }
    if (quotaBackendBytes != EtcdCluster.DEFAULT_QUOTA_BACKEND_BYTES) {
      args.addAll(List.of("--quota-backend-bytes", Long.toString(quotaBackendBytes)));
    }
    return List.copyOf(args);
  }
}
