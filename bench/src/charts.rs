//! The SVG charts of a run, written next to `bench.md`: latency and throughput against
//! concurrency (the sweep), the ratio of every scenario to its baseline, and wardle's memory
//! against the number of stored objects.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::report::{Report, Row};

/// A panel of a chart.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The figure of a measurement a panel plots.
type Figure = fn(&crate::report::Measurement) -> Option<f64>;

/// The points of a line.
type Points = Vec<(f64, f64)>;

/// What drawing a chart failed with.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

fn drawing<E: std::fmt::Display>(e: E) -> Error {
    format!("drawing a chart: {e}").into()
}

const WARDLE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const BASELINE: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
const MET: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const MISSED: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const NO_TARGET: RGBColor = RGBColor(0x9e, 0xb9, 0xd4);

/// Writes every chart the report has figures for into `dir`; returns the files written.
pub fn write(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut written = Vec::new();
    let sweep: Vec<&Row> = report.rows.iter().filter(|r| r.sweep.is_some()).collect();
    if !sweep.is_empty() {
        let file = dir.join("latency-vs-concurrency.svg");
        concurrency(&sweep, &file)?;
        written.push(file);
    }
    let ratios: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| {
            r.sweep.is_none() && (r.ratio.is_some_and(f64::is_finite) || r.target.is_some())
        })
        .collect();
    if !ratios.is_empty() {
        let file = dir.join("ratios.svg");
        ratio_bars(
            &ratios,
            &file,
            "wardle ÷ its baseline (green: met, red: missed, │ target; ↑ higher is better, ↓ lower)",
        )?;
        written.push(file);
    }
    let peer = crate::peer::versus::chart_rows(&report.rows);
    if !peer.is_empty() {
        let file = dir.join("peer.svg");
        let refs: Vec<&Row> = peer.iter().collect();
        ratio_bars(
            &refs,
            &file,
            "wardle ÷ sample-apiserver (green: met, red: missed, │ target; ↑ higher is better, ↓ lower)",
        )?;
        written.push(file);
    }
    if report.memory_curve.len() > 1 {
        let file = dir.join("memory-vs-objects.svg");
        memory(report, &file)?;
        written.push(file);
    }
    Ok(written)
}

/// A tick label: few digits, no float noise.
fn tick(v: &f64) -> String {
    match v.abs() {
        a if a >= 1000.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.0}"),
        a if a >= 1.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// A range for a log axis holding `values`, with some room.
fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (mut lo, mut hi) = (f64::MAX, f64::MIN);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return 0.1..10.0;
    }
    (lo / 1.5)..(hi * 1.5)
}

/// p99 latency and throughput against clients, for GET and CREATE, wardle and baseline.
fn concurrency(rows: &[&Row], file: &Path) -> Result<(), Error> {
    let root = SVGBackend::new(file, (1100, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(drawing)?;
    let root = root
        .titled(
            "Latency and throughput against concurrency (HTTP/2, wardle on the memory store)",
            ("sans-serif", 18),
        )
        .map_err(drawing)?;
    let (left, right) = root.split_horizontally(550);
    let clients = log_range(
        rows.iter()
            .filter_map(|r| r.sweep.as_ref())
            .map(|s| s.clients as f64),
    );
    let series =
        |op: &str, wardle: bool, figure: fn(&crate::report::Measurement) -> Option<f64>| {
            rows.iter()
                .filter(|r| r.sweep.as_ref().is_some_and(|s| s.operation == op))
                .filter_map(|r| {
                    let m = if wardle { &r.framework } else { &r.baseline };
                    Some((r.sweep.as_ref()?.clients as f64, figure(m)?))
                })
                .collect::<Vec<_>>()
        };
    let panels: [(&Area, &str, Figure); 2] = [
        (&left, "p99 latency, ms", |m| m.p99_ms),
        (&right, "throughput, req/s", |m| m.requests_per_second),
    ];
    for (area, what, figure) in panels {
        let all: Vec<f64> = ["GET", "CREATE"]
            .iter()
            .flat_map(|op| {
                series(op, true, figure)
                    .into_iter()
                    .chain(series(op, false, figure))
            })
            .map(|(_, y)| y)
            .collect();
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .caption(what, ("sans-serif", 15))
            .build_cartesian_2d(
                clients.clone().log_scale(),
                log_range(all.into_iter()).log_scale(),
            )
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("clients")
            .y_desc(what)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&tick)
            .max_light_lines(1)
            .draw()
            .map_err(drawing)?;
        for (op, wardle, color, dashed) in [
            ("GET", true, WARDLE, false),
            ("GET", false, BASELINE, false),
            ("CREATE", true, WARDLE, true),
            ("CREATE", false, BASELINE, true),
        ] {
            let points = series(op, wardle, figure);
            let style = ShapeStyle::from(&color).stroke_width(2);
            let label = format!("{op}, {}", if wardle { "wardle" } else { "baseline" });
            if dashed {
                chart
                    .draw_series(DashedLineSeries::new(points.clone(), 6, 4, style))
                    .map_err(drawing)?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 8, y)], style));
            } else {
                chart
                    .draw_series(LineSeries::new(points.clone(), style))
                    .map_err(drawing)?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(drawing)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(drawing)?;
    }
    root.present().map_err(drawing)
}

/// One horizontal bar per scenario: its ratio to its baseline, green where its target was
/// met, red where missed, and a tick at the bound of a target on the ratio itself.
fn ratio_bars(rows: &[&Row], file: &Path, caption: &str) -> Result<(), Error> {
    let n = rows.len();
    let height = 90 + 34 * n as u32;
    let root = SVGBackend::new(file, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(drawing)?;
    let max = rows
        .iter()
        .flat_map(|r| {
            let bound = r
                .target
                .as_ref()
                .filter(|t| t.text.starts_with("ratio"))
                .map(|t| t.bound);
            r.ratio.into_iter().chain(bound)
        })
        .fold(1.0f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 16))
        .margin(15)
        .margin_left(440)
        .x_label_area_size(35)
        .build_cartesian_2d(0f64..max, 0f64..n as f64)
        .map_err(drawing)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("ratio (see each scenario for what it compares and which way is better)")
        .draw()
        .map_err(drawing)?;
    for (i, row) in rows.iter().enumerate() {
        let ratio = row.ratio.unwrap_or(0.0);
        let y = (n - 1 - i) as f64;
        let color = match &row.target {
            Some(t) if t.met => MET,
            Some(_) => MISSED,
            None => NO_TARGET,
        };
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, y + 0.15), (ratio, y + 0.85)],
                color.filled(),
            )))
            .map_err(drawing)?;
        let value = match (row.ratio, &row.target) {
            // A ratio its target judges is printed as the tables print it, on the side of the
            // bound its colour says.
            (Some(r), Some(t)) if t.value == Some(r) => t.shown(),
            (Some(r), _) => format!("{r:.2}"),
            (None, _) => "no figure: failed (see bench.md)".to_string(),
        };
        chart
            .draw_series(std::iter::once(Text::new(
                value,
                (ratio, y + 0.5),
                ("sans-serif", 12)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            )))
            .map_err(drawing)?;
        if let Some(t) = row.target.as_ref().filter(|t| t.text.starts_with("ratio")) {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(t.bound, y + 0.05), (t.bound, y + 0.95)],
                    ShapeStyle::from(&BLACK).stroke_width(2),
                )))
                .map_err(drawing)?;
        }
        let (px, py) = chart.backend_coord(&(0.0, y + 0.5));
        let mut label = if row.scenario.chars().count() > 60 {
            format!("{}…", row.scenario.chars().take(59).collect::<String>())
        } else {
            row.scenario.clone()
        };
        if row.compared.contains("higher is better") {
            label.push_str(" ↑");
        } else if row.compared.contains("lower") {
            label.push_str(" ↓");
        }
        root.draw(&Text::new(
            label,
            (px - 8, py),
            ("sans-serif", 12)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))
        .map_err(drawing)?;
    }
    root.present().map_err(drawing)
}

/// wardle's RSS against the objects stored, with the objects' JSON and the target (idle RSS
/// plus twice the JSON).
fn memory(report: &Report, file: &Path) -> Result<(), Error> {
    let curve = &report.memory_curve;
    let root = SVGBackend::new(file, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(drawing)?;
    let idle = curve.first().map_or(0.0, |p| p.rss_mib);
    let max_objects = curve.iter().map(|p| p.objects).max().unwrap_or(1) as f64;
    let max_mib = curve
        .iter()
        .map(|p| p.rss_mib.max(idle + 2.0 * p.json_mib))
        .fold(1.0f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "wardle's resident memory against stored Flunders (embedded store, watch cache on)",
            ("sans-serif", 16),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..max_objects, 0f64..max_mib)
        .map_err(drawing)?;
    chart
        .configure_mesh()
        .x_desc("objects")
        .y_desc("MiB")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()
        .map_err(drawing)?;
    let lines: [(&str, RGBColor, Points); 3] = [
        (
            "wardle RSS",
            WARDLE,
            curve
                .iter()
                .map(|p| (p.objects as f64, p.rss_mib))
                .collect(),
        ),
        (
            "idle RSS + 2 × the objects' JSON (target)",
            MET,
            curve
                .iter()
                .map(|p| (p.objects as f64, idle + 2.0 * p.json_mib))
                .collect(),
        ),
        (
            "the objects' JSON",
            BASELINE,
            curve
                .iter()
                .map(|p| (p.objects as f64, p.json_mib))
                .collect(),
        ),
    ];
    for (label, color, points) in lines {
        let style = ShapeStyle::from(&color).stroke_width(2);
        chart
            .draw_series(LineSeries::new(points.clone(), style))
            .map_err(drawing)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )
            .map_err(drawing)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(drawing)?;
    root.present().map_err(drawing)
}
