package io.steelyard.testkit;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Objects;

/**
 * Users and roles of a cluster started with {@link EtcdCluster.Builder#rootPassword}, set up as
 * an operator would with {@code etcdctl role add / role grant-permission --prefix / user add /
 * user grant-role}, through etcd's JSON gateway as {@value EtcdCluster#ROOT_USER}.
 *
 * <pre>{@code
 * EtcdAuthAdmin admin = etcd.authAdmin();
 * admin.addRole("steelyard-client", EtcdAuthAdmin.Access.READ, "/services/");
 * admin.addUser("caller", "callerpw", "steelyard-client");
 * }</pre>
 */
public final class EtcdAuthAdmin {

  /** What a role may do under a prefix, as {@code etcdctl role grant-permission}. */
  public enum Access {
    READ,
    WRITE,
    READWRITE
  }

  private final URI endpoint;
  private final String rootPassword;

  EtcdAuthAdmin(URI endpoint, String rootPassword) {
    this.endpoint = endpoint;
    this.rootPassword = rootPassword;
  }

  /**
   * Creates {@code role} with {@code access} to every key under each prefix ({@code etcdctl role
   * add ROLE; etcdctl role grant-permission ROLE --prefix=true ACCESS PREFIX}).
   */
  public EtcdAuthAdmin addRole(String role, Access access, String... prefixes) {
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(access, "access");
    String token = EtcdHttp.authenticate(endpoint, EtcdCluster.ROOT_USER, rootPassword);
    EtcdHttp.post(endpoint, "/v3/auth/role/add", "{\"name\":" + EtcdHttp.json(role) + "}", token);
    for (String prefix : prefixes) {
      String body =
          "{\"name\":" + EtcdHttp.json(role)
              + ",\"perm\":{\"permType\":\"" + access + "\",\"key\":\"" + base64(prefix)
              + "\",\"range_end\":\"" + base64(prefixEnd(prefix)) + "\"}}";
      EtcdHttp.post(endpoint, "/v3/auth/role/grant", body, token);
    }
    return this;
  }

  /** Creates {@code user} and grants it {@code roles} ({@code etcdctl user add; user grant-role}). */
  public EtcdAuthAdmin addUser(String user, String password, String... roles) {
    String token = EtcdHttp.authenticate(endpoint, EtcdCluster.ROOT_USER, rootPassword);
    EtcdHttp.post(
        endpoint,
        "/v3/auth/user/add",
        "{\"name\":" + EtcdHttp.json(user) + ",\"password\":" + EtcdHttp.json(password) + "}",
        token);
    return grantRole(user, roles);
  }

  /** Grants {@code roles} to an existing {@code user} ({@code etcdctl user grant-role}). */
  public EtcdAuthAdmin grantRole(String user, String... roles) {
    String token = EtcdHttp.authenticate(endpoint, EtcdCluster.ROOT_USER, rootPassword);
    for (String role : roles) {
      EtcdHttp.post(
          endpoint,
          "/v3/auth/user/grant",
          "{\"user\":" + EtcdHttp.json(user) + ",\"role\":" + EtcdHttp.json(role) + "}",
          token);
    }
    return this;
  }

  /** The end of the range holding every key that starts with {@code prefix}, as etcdctl computes it. */
  static String prefixEnd(String prefix) {
    byte[] b = prefix.getBytes(StandardCharsets.UTF_8);
    for (int i = b.length - 1; i >= 0; i--) {
      if (b[i] != (byte) 0xff) {
        b[i]++;
        return new String(b, 0, i + 1, StandardCharsets.UTF_8);
      }
    }
    return "\0";
  }

  private static String base64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }
}
