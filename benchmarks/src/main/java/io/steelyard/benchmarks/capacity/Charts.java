package io.steelyard.benchmarks.capacity;

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
import javax.imageio.ImageIO;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogarithmicAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.renderer.xy.XYItemRenderer;
import org.jfree.data.xy.DefaultTableXYDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * One PNG per (scenario, mix): on top, p99 latency per half second for every policy (log scale);
 * below, one small chart per policy with each server's share of the calls over time (stacked).
 * A dashed line marks the scenario's event.
 */
final class Charts {

  private static final int WIDTH = 1400;
  private static final int TOP_HEIGHT = 420;
  private static final int CELL_WIDTH = WIDTH / 4;
  private static final int CELL_HEIGHT = 220;

  private static final Color[] POLICY_COLORS = {
    new Color(0x7f7f7f), new Color(0xbcbd22), new Color(0x17becf), new Color(0x9467bd),
    new Color(0x8c564b), new Color(0xd62728), new Color(0xff7f0e), new Color(0x1f77b4),
    new Color(0x2ca02c),
  };

  private static final Color[] SERVER_COLORS = {
    new Color(0x4e79a7), new Color(0xf28e2b), new Color(0x59a14f), new Color(0xe15759),
    new Color(0xb07aa1), new Color(0x76b7b2),
  };

  private Charts() {}

  static Path draw(List<RunResult> runs, Path dir, CapacityBench.Settings settings)
      throws IOException {
    RunResult first = runs.get(0);
    int rows = (runs.size() + 3) / 4;
    BufferedImage image =
        new BufferedImage(WIDTH, TOP_HEIGHT + rows * CELL_HEIGHT, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, image.getWidth(), image.getHeight());

    latencyChart(runs, settings).draw(g, new Rectangle2D.Double(0, 0, WIDTH, TOP_HEIGHT));
    for (int i = 0; i < runs.size(); i++) {
      int x = (i % 4) * CELL_WIDTH;
      int y = TOP_HEIGHT + (i / 4) * CELL_HEIGHT;
      shareChart(runs.get(i)).draw(g, new Rectangle2D.Double(x, y, CELL_WIDTH, CELL_HEIGHT));
    }
    g.dispose();
    Path file = dir.resolve("capacity-" + first.scenario.id() + "-" + first.mix.name() + ".png");
    ImageIO.write(indexed(image), "png", file.toFile());
    return file;
  }

  /**
   * The image in 256 colours: a chart needs no more, and the PNG in {@code docs/} shrinks to about
   * a third of its full-colour size.
   */
  private static BufferedImage indexed(BufferedImage image) {
    BufferedImage out =
        new BufferedImage(image.getWidth(), image.getHeight(), BufferedImage.TYPE_BYTE_INDEXED);
    Graphics2D g = out.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_DITHERING, RenderingHints.VALUE_DITHER_DISABLE);
    g.drawImage(image, 0, 0, null);
    g.dispose();
    return out;
  }

  private static JFreeChart latencyChart(List<RunResult> runs, CapacityBench.Settings settings) {
    RunResult first = runs.get(0);
    XYSeriesCollection data = new XYSeriesCollection();
    for (RunResult run : runs) {
      XYSeries series = new XYSeries(run.policy.label());
      double[] p99 = run.p99PerBucket();
      for (int b = 0; b < p99.length; b++) {
        if (!Double.isNaN(p99[b])) {
          series.add((b + 0.5) * run.bucketNanos / 1e9, Math.max(1.0, p99[b]));
        }
      }
      data.addSeries(series);
    }
    JFreeChart chart =
        ChartFactory.createXYLineChart(
            "(" + first.scenario.id() + ") " + first.scenario.title() + " — mix " + first.mix.describe()
                + ": p99 latency per 0.5 s (deadline " + settings.deadline().toMillis() + " ms)",
            "seconds into the measured period",
            "p99 latency, ms (log)",
            data,
            PlotOrientation.VERTICAL,
            true,
            false,
            false);
    chart.getTitle().setFont(new Font("DejaVu Sans", Font.BOLD, 15));
    XYPlot plot = chart.getXYPlot();
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(new Color(0xdddddd));
    plot.setRangeGridlinePaint(new Color(0xdddddd));
    LogarithmicAxis y = new LogarithmicAxis("p99 latency, ms (log scale)");
    y.setStrictValuesFlag(false);
    y.setExpTickLabelsFlag(false);
    y.setLog10TickLabelsFlag(false);
    y.setAutoRangeNextLogFlag(true);
    plot.setRangeAxis(y);
    XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, false);
    for (int i = 0; i < runs.size(); i++) {
      renderer.setSeriesPaint(i, POLICY_COLORS[i % POLICY_COLORS.length]);
      boolean ours = runs.get(i).policy.label().startsWith("weighted_least_request");
      renderer.setSeriesStroke(i, new BasicStroke(ours ? 2.6f : 1.4f));
    }
    plot.setRenderer(renderer);
    markEvent(plot, first);
    return chart;
  }

  private static JFreeChart shareChart(RunResult run) {
    DefaultTableXYDataset data = new DefaultTableXYDataset();
    int servers = run.mix.workers().length;
    for (int s = 0; s < servers; s++) {
      XYSeries series =
          new XYSeries("s" + s + " (" + run.mix.workers()[s] + "w)", true, false);
      for (int b = 0; b < run.buckets(); b++) {
        series.add((b + 0.5) * run.bucketNanos / 1e9, run.shares(b, b + 1)[s]);
      }
      data.addSeries(series);
    }
    JFreeChart chart =
        ChartFactory.createStackedXYAreaChart(
            run.policy.label(), null, null, data, PlotOrientation.VERTICAL, true, false, false);
    chart.getTitle().setFont(new Font("DejaVu Sans", Font.BOLD, 12));
    XYPlot plot = chart.getXYPlot();
    plot.setBackgroundPaint(Color.WHITE);
    NumberAxis y = (NumberAxis) plot.getRangeAxis();
    y.setRange(0, 1);
    y.setTickLabelFont(new Font("DejaVu Sans", Font.PLAIN, 9));
    plot.getDomainAxis().setTickLabelFont(new Font("DejaVu Sans", Font.PLAIN, 9));
    XYItemRenderer renderer = plot.getRenderer();
    for (int s = 0; s < servers; s++) {
      renderer.setSeriesPaint(s, SERVER_COLORS[s % SERVER_COLORS.length]);
    }
    markEvent(plot, run);
    return chart;
  }

  /** A dashed line at the event, and a dotted one at its end if it ends. */
  private static void markEvent(XYPlot plot, RunResult run) {
    if (run.scenario.event() != null) {
      plot.addDomainMarker(marker(run.eventAtNanos / 1e9, new float[] {6, 4}));
    }
    if (run.scenario.eventLength() != null) {
      double end = (run.eventAtNanos + run.scenario.eventLength().toNanos()) / 1e9;
      plot.addDomainMarker(marker(end, new float[] {2, 3}));
    }
  }

  private static ValueMarker marker(double seconds, float[] dash) {
    ValueMarker marker = new ValueMarker(seconds);
    marker.setPaint(Color.BLACK);
    marker.setStroke(
        new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 1, dash, 0));
    return marker;
  }
}
