//! The geometry of the charts: plain shapes with coordinates, classes and
//! titles, which the templates write as inline SVG (so every label goes
//! through the same escaping as the rest of the page). Colours come from
//! the stylesheet through the classes, so dark mode needs no second chart.

use serde::Serialize;

/// A chart: its size, what a screen reader hears, and its shapes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Chart {
    pub width: f64,
    pub height: f64,
    /// The accessible name of the picture.
    pub label: String,
    pub bars: Vec<Bar>,
    pub lines: Vec<Line>,
    pub texts: Vec<Text>,
}

/// A rectangle, with a tooltip and, where it stands for a run, a link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bar {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    pub class: String,
    pub title: String,
    pub href: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
    pub class: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Text {
    pub x: f64,
    pub y: f64,
    pub text: String,
    /// `start`, `middle` or `end`.
    pub anchor: &'static str,
    pub class: &'static str,
}

/// One mark of a sparkline: a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub class: String,
    /// How long it took, if it ran.
    pub value: Option<u64>,
    pub title: String,
    pub href: String,
}

/// One part of a stacked bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub class: String,
    pub value: f64,
    pub title: String,
}

/// One column of a stacked bar chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub label: String,
    pub segments: Vec<Segment>,
}

/// One row of the duration chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub label: String,
    pub p50: f64,
    pub p95: f64,
    pub title: String,
}

const SPARK_BAR: f64 = 5.0;
const SPARK_GAP: f64 = 2.0;
const SPARK_HEIGHT: f64 = 26.0;

/// Recent runs as bars, oldest left, newest at the right end of `slots`
/// places: the height is the run's duration against the longest shown,
/// the colour its status; a run that did not run is a short stub.
pub fn sparkline(marks: &[Mark], slots: usize, label: String) -> Chart {
    let slots = slots.max(marks.len()).max(1);
    let width = slots as f64 * (SPARK_BAR + SPARK_GAP) - SPARK_GAP;
    let longest = marks.iter().filter_map(|m| m.value).max().unwrap_or(0).max(1) as f64;
    let offset = slots - marks.len();
    let bars = marks
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let h = match m.value {
                Some(v) => (SPARK_HEIGHT * (v as f64 / longest)).max(8.0),
                None => 4.0,
            };
            Bar {
                x: round((offset + i) as f64 * (SPARK_BAR + SPARK_GAP)),
                y: round(SPARK_HEIGHT - h),
                w: SPARK_BAR,
                h: round(h),
                class: m.class.clone(),
                title: m.title.clone(),
                href: Some(m.href.clone()),
            }
        })
        .collect();
    Chart { width, height: SPARK_HEIGHT, label, bars, ..Chart::default() }
}

/// Stacked columns with a y axis from 0 to a round maximum; `fmt` writes
/// the axis labels.
pub fn stacked_columns(columns: &[Column], width: f64, height: f64, label: String, fmt: fn(f64) -> String) -> Chart {
    let (left, right, top, bottom) = (48.0, 8.0, 10.0, 24.0);
    let plot_w = width - left - right;
    let plot_h = height - top - bottom;
    let most = columns.iter().map(|c| c.segments.iter().map(|s| s.value).sum::<f64>()).fold(0.0, f64::max);
    let (max, step) = nice_axis(most);
    let mut chart = Chart { width, height, label, ..Chart::default() };
    let mut tick = 0.0;
    while tick <= max + step / 2.0 {
        let y = round(top + plot_h - plot_h * tick / max);
        chart.lines.push(Line { x1: left, y1: y, x2: width - right, y2: y, class: "grid" });
        chart.texts.push(Text { x: left - 6.0, y: y + 4.0, text: fmt(tick), anchor: "end", class: "axis" });
        tick += step;
    }
    let slot = plot_w / columns.len().max(1) as f64;
    let bar_w = round((slot * 0.68).max(2.0));
    for (i, column) in columns.iter().enumerate() {
        let x = round(left + slot * i as f64 + (slot - bar_w) / 2.0);
        let mut y = top + plot_h;
        for s in column.segments.iter().filter(|s| s.value > 0.0) {
            let h = plot_h * s.value / max;
            y -= h;
            chart.bars.push(Bar {
                x,
                y: round(y),
                w: bar_w,
                h: round(h),
                class: s.class.clone(),
                title: s.title.clone(),
                href: None,
            });
        }
        let text = column.label.clone();
        chart.texts.push(Text { x: round(x + bar_w / 2.0), y: height - 6.0, text, anchor: "middle", class: "axis" });
    }
    chart
}

/// One row per routine: the p50 bar inside the longer, lighter p95 bar, on
/// a common time scale in milliseconds; `fmt` writes the values.
pub fn spreads(rows: &[Spread], width: f64, label: String, fmt: fn(f64) -> String) -> Chart {
    let (left, right, top, row_h) = (170.0, 150.0, 22.0, 26.0);
    let plot_w = width - left - right;
    let height = top + row_h * rows.len().max(1) as f64 + 6.0;
    let most = rows.iter().map(|r| r.p95.max(r.p50)).fold(0.0, f64::max);
    let (max, step) = nice_time_axis(most);
    let mut chart = Chart { width, height, label, ..Chart::default() };
    let mut tick = 0.0;
    while tick <= max + step / 2.0 {
        let x = round(left + plot_w * tick / max);
        chart.lines.push(Line { x1: x, y1: top - 4.0, x2: x, y2: height - 6.0, class: "grid" });
        chart.texts.push(Text { x, y: top - 8.0, text: fmt(tick), anchor: "middle", class: "axis" });
        tick += step;
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let name: String = if r.label.chars().count() > 24 {
            format!("{}…", r.label.chars().take(23).collect::<String>())
        } else {
            r.label.clone()
        };
        chart.texts.push(Text { x: left - 8.0, y: y + 17.0, text: name, anchor: "end", class: "name" });
        let w95 = (plot_w * r.p95 / max).max(2.0);
        let w50 = (plot_w * r.p50 / max).max(2.0);
        let bar = |w: f64, class: &str, y: f64, h: f64| Bar {
            x: left,
            y: round(y),
            w: round(w),
            h,
            class: class.to_string(),
            title: r.title.clone(),
            href: None,
        };
        chart.bars.push(bar(w95, "p95", y + 5.0, 16.0));
        chart.bars.push(bar(w50, "p50", y + 9.0, 8.0));
        let text = format!("{} · {}", fmt(r.p50), fmt(r.p95));
        chart.texts.push(Text { x: round(left + w95 + 8.0), y: y + 17.0, text, anchor: "start", class: "value" });
    }
    chart
}

/// A round axis maximum at or above `most`, and the step of its ticks
/// (four or five ticks of 1, 2 or 5 times a power of ten).
pub fn nice_axis(most: f64) -> (f64, f64) {
    if most <= 0.0 || !most.is_finite() {
        return (1.0, 1.0);
    }
    let rough = most / 4.0;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * power).find(|s| *s >= rough).unwrap_or(10.0 * power);
    let step = if most < 4.0 && step < 1.0 { 1.0 } else { step };
    ((most / step).ceil().max(1.0) * step, step)
}

/// [`nice_axis`] for milliseconds: ticks of whole seconds, minutes or hours.
pub fn nice_time_axis(most_ms: f64) -> (f64, f64) {
    const STEPS: [f64; 16] =
        [100.0, 250.0, 500.0, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1_800e3, 3_600e3];
    if most_ms <= 0.0 || !most_ms.is_finite() {
        return (1e3, 1e3);
    }
    let rough = most_ms / 4.0;
    let step = STEPS.iter().copied().find(|s| *s >= rough).unwrap_or_else(|| (rough / 3_600e3).ceil() * 3_600e3);
    ((most_ms / step).ceil().max(1.0) * step, step)
}

/// The `p`-th percentile (nearest rank) of `sorted`, which is ascending.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice_axis(0.0), (1.0, 1.0));
        assert_eq!(nice_axis(3.0), (3.0, 1.0));
        assert_eq!(nice_axis(7.0), (8.0, 2.0));
        assert_eq!(nice_axis(95.0), (100.0, 25.0));
        assert_eq!(nice_axis(1234.0), (1500.0, 500.0));
        assert_eq!(nice_time_axis(600_000.0), (600_000.0, 300_000.0), "10 min in steps of 5 min");
        assert_eq!(nice_time_axis(95_000.0), (120_000.0, 30_000.0));
        assert_eq!(nice_time_axis(3_700.0), (4_000.0, 1_000.0));
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 95.0), Some(95));
        assert_eq!(percentile(&[7], 95.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn a_sparkline_puts_the_newest_run_at_the_right_end() {
        let mark = |v: Option<u64>, class: &str| Mark {
            class: class.into(),
            value: v,
            title: String::new(),
            href: "/runs/1".into(),
        };
        let chart =
            sparkline(&[mark(Some(100), "succeeded"), mark(None, "skipped"), mark(Some(50), "failed")], 10, "x".into());
        assert_eq!(chart.width, 68.0);
        let last = chart.bars.last().unwrap();
        assert_eq!((last.x, last.class.as_str()), (63.0, "failed"));
        assert_eq!(chart.bars[0].h, SPARK_HEIGHT);
        assert_eq!(chart.bars[1].h, 4.0);
        assert_eq!(last.h, SPARK_HEIGHT / 2.0);
        assert!(chart.bars.iter().all(|b| b.y + b.h <= SPARK_HEIGHT + 0.01));
    }

    #[test]
    fn stacked_columns_stack_from_the_axis_up() {
        let seg = |class: &str, value: f64| Segment { class: class.into(), value, title: String::new() };
        let columns = vec![
            Column { label: "Mon 1".into(), segments: vec![seg("succeeded", 6.0), seg("failed", 2.0)] },
            Column { label: "Tue 2".into(), segments: vec![seg("succeeded", 0.0)] },
        ];
        let chart = stacked_columns(&columns, 400.0, 200.0, "runs".into(), |v| format!("{v}"));
        assert_eq!(chart.bars.len(), 2, "empty segments draw nothing");
        let (ok, failed) = (&chart.bars[0], &chart.bars[1]);
        assert_eq!(ok.y + ok.h, 176.0, "the first segment stands on the axis");
        assert!((failed.y + failed.h - ok.y).abs() < 0.2, "the second stands on the first");
        assert_eq!(ok.h, 3.0 * failed.h);
        let labels: Vec<&str> = chart.texts.iter().map(|t| t.text.as_str()).collect();
        assert!(labels.contains(&"Mon 1") && labels.contains(&"8"), "{labels:?}");
    }
}
