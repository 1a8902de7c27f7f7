package io.steelyard.benchmarks.soak;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Rectangle2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.ToDoubleFunction;
import javax.imageio.ImageIO;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.RangeType;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The soak's curves in one PNG, drawn with JFreeChart as the capacity charts are: heap after GC,
 * live threads and open file descriptors of both JVMs, etcd's watch streams and db size, failed
 * calls per sample; grey lines mark member restarts, a red one the leader freeze.
 */
final class SoakChart {

  private static final int WIDTH = 1100;
  private static final int HEIGHT = 1450;
  private static final Color AGENT = new Color(0x1f77b4);
  private static final Color CALLERS = new Color(0xff7f0e);

  private SoakChart() {}

  static void draw(List<SoakReport.Sample> samples, List<Chaos.Event> events, long t0, Path file)
      throws IOException {
    NumberAxis minutes = new NumberAxis("minutes into the load");
    CombinedDomainXYPlot plot = new CombinedDomainXYPlot(minutes);
    plot.setGap(12);
    plot.add(plot("heap after GC, MB", samples, events, t0, 1e6, "agent JVM", SoakReport.Sample::agentHeap,
        "callers JVM", SoakReport.Sample::callersHeap));
    XYPlot threads = plot("live threads", samples, events, t0, 1, "agent JVM", SoakReport.Sample::agentThreads,
        "callers JVM", SoakReport.Sample::callersThreads);
    XYSeriesCollection own = (XYSeriesCollection) threads.getDataset();
    own.addSeries(series("agent JVM, outside grpc's executor pool", samples, 1,
        x -> x.agentThreads() - x.agentPooledThreads()));
    own.addSeries(series("callers JVM, outside grpc's executor pool", samples, 1,
        x -> x.callersThreads() - x.callersPooledThreads()));
    XYLineAndShapeRenderer r = (XYLineAndShapeRenderer) threads.getRenderer();
    float[] dash = {6, 4};
    for (int i = 2; i < 4; i++) {
      r.setSeriesPaint(i, i == 2 ? AGENT : CALLERS);
      r.setSeriesStroke(i, new BasicStroke(1.4f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10, dash, 0));
    }
    plot.add(threads);
    plot.add(plot("open fds", samples, events, t0, 1, "agent JVM", SoakReport.Sample::agentFds,
        "callers JVM", SoakReport.Sample::callersFds));
    plot.add(plot("etcd watch streams", samples, events, t0, 1, "all members", SoakReport.Sample::watchStreams,
        null, null));
    plot.add(plot("etcd db, MB", samples, events, t0, 1e6, "largest member", SoakReport.Sample::dbBytes,
        null, null));
    plot.add(plot("slowest call / 10 s, s", samples, events, t0, 1e9, "callers JVM",
        SoakReport.Sample::slowestCallNanos, null, null));
    plot.add(plot("failed calls / 10 s", samples, events, t0, 1, "callers JVM", failedPerSample(samples),
        null, null));
    JFreeChart chart = new JFreeChart("Soak — blue: agent JVM (or etcd), orange: callers JVM (threads dashed:"
        + " outside grpc's executor pool); grey: member restart, red: leader freeze", new Font("DejaVu Sans", Font.BOLD, 15), plot, false);
    chart.setBackgroundPaint(Color.WHITE);
    BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    chart.draw(g, new Rectangle2D.Double(0, 0, WIDTH, HEIGHT));
    g.dispose();
    // 256 colours are plenty for lines, and the PNG in docs/ stays small (as Charts does).
    BufferedImage indexed = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_BYTE_INDEXED);
    Graphics2D gi = indexed.createGraphics();
    gi.setRenderingHint(RenderingHints.KEY_DITHERING, RenderingHints.VALUE_DITHER_DISABLE);
    gi.drawImage(image, 0, 0, null);
    gi.dispose();
    ImageIO.write(indexed, "png", file.toFile());
  }

  private static ToDoubleFunction<SoakReport.Sample> failedPerSample(List<SoakReport.Sample> samples) {
    return x -> {
      int i = samples.indexOf(x);
      return i == 0 ? x.failed() : x.failed() - samples.get(i - 1).failed();
    };
  }

  private static XYPlot plot(String label, List<SoakReport.Sample> samples, List<Chaos.Event> events, long t0,
      double scale, String name1, ToDoubleFunction<SoakReport.Sample> v1, String name2,
      ToDoubleFunction<SoakReport.Sample> v2) {
    XYSeriesCollection data = new XYSeriesCollection();
    data.addSeries(series(label + " — " + name1, samples, scale, v1));
    if (v2 != null) {
      data.addSeries(series(label + " — " + name2, samples, scale, v2));
    }
    NumberAxis y = new NumberAxis(label);
    y.setAutoRangeIncludesZero(true);
    y.setRangeType(RangeType.POSITIVE);
    y.setAutoRangeMinimumSize(1); // a flat zero (no failed call) still gets a readable axis
    if (scale == 1) {
      y.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
    }
    XYLineAndShapeRenderer r = new XYLineAndShapeRenderer(true, false);
    r.setSeriesPaint(0, AGENT);
    r.setSeriesPaint(1, CALLERS);
    r.setSeriesStroke(0, new BasicStroke(1.8f));
    r.setSeriesStroke(1, new BasicStroke(1.8f));
    XYPlot p = new XYPlot(data, null, y, r);
    p.setBackgroundPaint(Color.WHITE);
    p.setDomainGridlinePaint(new Color(0xdddddd));
    p.setRangeGridlinePaint(new Color(0xdddddd));
    for (Chaos.Event e : events) {
      ValueMarker m = new ValueMarker((e.startNanos() - t0) / 60e9);
      m.setPaint(e.kind().equals("freeze") ? new Color(0xd62728) : new Color(0x999999));
      m.setStroke(new BasicStroke(1.2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10, new float[] {4, 4}, 0));
      p.addDomainMarker(m);
    }
    return p;
  }

  private static XYSeries series(String name, List<SoakReport.Sample> samples, double scale,
      ToDoubleFunction<SoakReport.Sample> v) {
    XYSeries s = new XYSeries(name);
    for (SoakReport.Sample x : samples) {
      s.add(x.t() / 60, v.applyAsDouble(x) / scale);
    }
    return s;
  }
}
