package io.steelyard.testkit;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Fills a cluster's backend quota until etcd raises its NOSPACE alarm, and frees it again the way
 * an operator does (etcd's maintenance guide): delete what filled it, compact, defragment every
 * member, disarm the alarm. Through the JSON gateway, so it works with either backend.
 */
final class EtcdQuota {

  /** Keys written by {@link #fill}; outside any registry prefix. */
  static final String FILLER_PREFIX = "/steelyard-testkit/quota-filler/";
  /** Refuse to fill a quota larger than this: a test must not write gigabytes by mistake. */
  static final long MAX_FILLABLE_QUOTA_BYTES = 64L * 1024 * 1024;

  private static final int VALUE_BYTES = 256 * 1024;
  private static final Duration WRITE_TIMEOUT = Duration.ofSeconds(30);
  private static final Duration DEFRAG_TIMEOUT = Duration.ofSeconds(60);
  private static final String NOSPACE = "database space exceeded";
  private static final Pattern ALARM =
      Pattern.compile("\"memberID\"\\s*:\\s*\"?(\\d+)\"?\\s*,\\s*\"alarm\"\\s*:\\s*\"(\\w+)\"");
  private static final Pattern REVISION = Pattern.compile("\"revision\"\\s*:\\s*\"?(\\d+)\"?");

  private EtcdQuota() {}

  /** An active alarm: the member that raised it (decimal id) and its type, e.g. NOSPACE. */
  record Alarm(String memberId, String type) {}

  /**
   * Writes 256 KiB values through {@code endpoint} until etcd refuses one with "database space
   * exceeded"; returns the bytes it wrote before that.
   */
  static long fill(URI endpoint, long quotaBytes) {
    if (quotaBytes > MAX_FILLABLE_QUOTA_BYTES) {
      throw new IllegalStateException(
          "fillQuota: the quota is " + quotaBytes + " bytes; build the cluster with quotaBackendBytes(<= "
              + MAX_FILLABLE_QUOTA_BYTES + ") so filling it stays cheap");
    }
    String value = EtcdGateway.base64(new byte[VALUE_BYTES]);
    long written = 0;
    // bbolt grows its file in steps and frees nothing before a defragmentation: the alarm comes
    // within about twice the quota in writes.
    long maxPuts = 4 * quotaBytes / VALUE_BYTES + 16;
    for (long i = 0; i < maxPuts; i++) {
      String body = "{\"key\":\"" + EtcdGateway.base64(FILLER_PREFIX + i) + "\",\"value\":\"" + value + "\"}";
      EtcdGateway.Reply reply = EtcdGateway.post(endpoint, "/v3/kv/put", body, WRITE_TIMEOUT);
      if (reply.ok()) {
        written += VALUE_BYTES;
      } else if (reply.body().contains(NOSPACE)) {
        return written;
      } else {
        throw new IllegalStateException(
            "fillQuota: etcd refused a filler write for another reason: HTTP " + reply.status() + " " + reply.body());
      }
    }
    throw new IllegalStateException("fillQuota: no NOSPACE after " + written + " bytes (quota " + quotaBytes + ")");
  }

  /** The cluster's active alarms, as {@code endpoint} reports them. */
  static List<Alarm> alarms(URI endpoint) {
    String body = EtcdGateway.postOk(endpoint, "/v3/maintenance/alarm", "{\"action\":\"GET\"}", WRITE_TIMEOUT);
    List<Alarm> alarms = new ArrayList<>();
    Matcher m = ALARM.matcher(body);
    while (m.find()) {
      alarms.add(new Alarm(m.group(1), m.group(2)));
    }
    return alarms;
  }

  /**
   * Deletes the filler, compacts at the resulting revision, defragments each of {@code members}
   * (each must be reachable) and disarms every NOSPACE alarm.
   */
  static void free(URI endpoint, List<URI> members) {
    String end = new String(rangeEnd(FILLER_PREFIX.getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8);
    String deleted =
        EtcdGateway.postOk(
            endpoint,
            "/v3/kv/deleterange",
            "{\"key\":\"" + EtcdGateway.base64(FILLER_PREFIX) + "\",\"range_end\":\"" + EtcdGateway.base64(end) + "\"}",
            WRITE_TIMEOUT);
    Matcher revision = REVISION.matcher(deleted);
    if (!revision.find()) {
      throw new IllegalStateException("freeQuota: no revision in etcd's answer to the delete: " + deleted);
    }
    EtcdGateway.postOk(
        endpoint,
        "/v3/kv/compaction",
        "{\"revision\":\"" + revision.group(1) + "\",\"physical\":true}",
        WRITE_TIMEOUT);
    for (URI member : members) {
      EtcdGateway.postOk(member, "/v3/maintenance/defragment", "{}", DEFRAG_TIMEOUT);
    }
    for (Alarm alarm : alarms(endpoint)) {
      if ("NOSPACE".equals(alarm.type())) {
        EtcdGateway.postOk(
            endpoint,
            "/v3/maintenance/alarm",
            "{\"action\":\"DEACTIVATE\",\"memberID\":\"" + alarm.memberId() + "\",\"alarm\":\"NOSPACE\"}",
            WRITE_TIMEOUT);
      }
    }
  }

  /** Waits up to 10 s until {@code alarms} shows NOSPACE {@code raised}, or disarmed with false. */
  static void awaitNoSpace(Supplier<List<String>> alarms, boolean raised) {
    EtcdHttp.await(
        raised ? "NOSPACE alarm" : "NOSPACE disarmed",
        () -> alarms.get().contains("NOSPACE") == raised, () -> true, Duration.ofSeconds(10), () -> "");
  }

  private static byte[] rangeEnd(byte[] prefix) {
    byte[] end = prefix.clone();
    end[end.length - 1]++; // the prefix ends in '/', never 0xff
    return end;
  }
}
