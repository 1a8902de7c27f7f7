package io.steelyard.balancer.orca;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.Status;
import io.grpc.util.ForwardingLoadBalancerHelper;
import io.grpc.util.ForwardingSubchannel;
import io.grpc.xds.orca.OrcaOobUtil;
import io.grpc.xds.orca.OrcaOobUtil.OrcaReportingConfig;
import io.steelyard.balancer.spi.LoadAwarePickerFactory;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import javax.annotation.concurrent.NotThreadSafe;

/**
 * {@code weighted_least_request} with server-reported utilization: the same balancer and picker
 * factory ({@code WeightedLeastRequestLoadBalancerProvider.newPickerFactory}), whose per-endpoint
 * loads also receive
 *
 * <ul>
 *   <li><b>per-call</b> ORCA reports, always: grpc's {@code OrcaPerRequestUtil} reads each call's
 *       trailers, wrapped around the endpoint's own tracer;
 *   <li><b>out-of-band</b> reports when {@code enableOobLoadReport} is on: grpc's {@code
 *       OrcaOobUtil} opens one {@code OpenRcaService} stream per subchannel and reports every
 *       {@code oobReportingPeriod}, as grpc's {@code weighted_round_robin} does.
 * </ul>
 *
 * <p>Threading: a {@link LoadBalancer}, confined to the channel's SynchronizationContext (OOB
 * listeners run there too); per-call reports arrive on transport threads and go straight to the
 * endpoint's thread-safe load.
 */
@NotThreadSafe
final class OrcaLeastRequestLoadBalancer extends LoadBalancer {

  private final LoadAwarePickerFactory pickers;
  private final LoadBalancer delegate;

  /** Every live subchannel created through us, with its address group, for OOB (re)configuration. */
  private final Map<Subchannel, EquivalentAddressGroup> subchannels = new LinkedHashMap<>();

  private OrcaConfig config = OrcaConfig.DEFAULT;

  /**
   * @param pickers the least-request picker factory, with per-call ORCA reading on its tracers
   * @param weighted makes steelyard's weighted balancer over a helper and a picker factory
   */
  OrcaLeastRequestLoadBalancer(
      Helper helper,
      LoadAwarePickerFactory pickers,
      BiFunction<Helper, LoadAwarePickerFactory, LoadBalancer> weighted) {
    this.pickers = pickers;
    Helper orcaHelper = OrcaOobUtil.newOrcaReportingHelper(helper);
    this.delegate = weighted.apply(new OobHelper(orcaHelper), pickers);
  }

  @Override
  public Status acceptResolvedAddresses(ResolvedAddresses resolvedAddresses) {
    Object parsed = resolvedAddresses.getLoadBalancingPolicyConfig();
    OrcaConfig next = parsed instanceof OrcaConfig ? (OrcaConfig) parsed : OrcaConfig.DEFAULT;
    boolean oobChanged =
        next.enableOob != config.enableOob || next.oobPeriodNanos != config.oobPeriodNanos;
    config = next;
    if (oobChanged) {
      for (Map.Entry<Subchannel, EquivalentAddressGroup> entry : subchannels.entrySet()) {
        setOobListener(entry.getKey(), entry.getValue());
      }
    }
    return delegate.acceptResolvedAddresses(
        resolvedAddresses.toBuilder().setLoadBalancingPolicyConfig(config.base).build());
  }

  @Override
  public void handleNameResolutionError(Status error) {
    delegate.handleNameResolutionError(error);
  }

  @Override
  public void requestConnection() {
    delegate.requestConnection();
  }

  @Override
  public void shutdown() {
    delegate.shutdown();
    subchannels.clear();
  }

  private void setOobListener(Subchannel subchannel, EquivalentAddressGroup eag) {
    // Period 0 to OrcaOobUtil would be "no OOB"; a null listener turns reporting off.
    OrcaReportingConfig reporting =
        OrcaReportingConfig.newBuilder()
            .setReportInterval(config.oobPeriodNanos, TimeUnit.NANOSECONDS)
            .build();
    OrcaOobUtil.setListener(
        subchannel,
        config.enableOob
            ? report -> pickers.reportUtilization(eag, OrcaUtilization.of(report))
            : null,
        reporting);
  }

  /** Registers each new subchannel for OOB reports and forgets it when it shuts down. */
  private final class OobHelper extends ForwardingLoadBalancerHelper {
    private final Helper orcaHelper;

    OobHelper(Helper orcaHelper) {
      this.orcaHelper = orcaHelper;
    }

    @Override
    protected Helper delegate() {
      return orcaHelper;
    }

    @Override
    public Subchannel createSubchannel(CreateSubchannelArgs args) {
      Subchannel created = super.createSubchannel(args);
      EquivalentAddressGroup eag = args.getAddresses().get(0);
      Subchannel tracked =
          new ForwardingSubchannel() {
            @Override
            protected Subchannel delegate() {
              return created;
            }

            @Override
            public void shutdown() {
              subchannels.remove(this);
              super.shutdown();
            }
          };
      subchannels.put(tracked, eag);
      if (config.enableOob) {
        setOobListener(created, eag);
      }
      return tracked;
    }
  }
}
