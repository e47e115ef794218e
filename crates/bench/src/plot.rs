//! SVG bar charts of a benchmark run: one panel per metric (puts per CPU-second, lookups
//! per CPU-second), one group of bars per entry count, one bar per store and variant.
//! Plain SVG text, no dependencies, so a report renders anywhere.

use std::fmt::Write as _;

use cairn_harness::report::xml_escape as escape;

/// One bar: a label and a value.
pub struct Bar {
    /// Store and variant, e.g. `cairn snappy(1024)`.
    pub label: String,
    /// Entry count of the group the bar belongs to.
    pub n: u64,
    /// Puts per CPU-second.
    pub puts: f64,
    /// Lookups per CPU-second.
    pub lookups: f64,
}

/// A metric: its name and how to read it from a bar.
type Metric = (&'static str, fn(&Bar) -> f64);

const PALETTE: [&str; 10] = [
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#9467bd",
    "#8c564b", "#7f7f7f",
];

/// Renders `bars` as an SVG document.
pub fn svg(title: &str, bars: &[Bar]) -> String {
    let mut labels: Vec<&str> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    for b in bars {
        if !labels.contains(&b.label.as_str()) {
            labels.push(&b.label);
        }
        if !sizes.contains(&b.n) {
            sizes.push(b.n);
        }
    }
    let (panel_w, panel_h, left, top) = (520.0f64, 300.0f64, 70.0f64, 50.0f64);
    let legend_h = 18.0 * labels.len() as f64 + 20.0;
    let width = left + 2.0 * (panel_w + 60.0);
    let height = top + panel_h + 60.0 + legend_h;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{left}" y="24" font-size="16">{}</text>"#,
        escape(title)
    );
    let metrics: [Metric; 2] = [
        ("puts per CPU-second", |b| b.puts),
        ("lookups per CPU-second", |b| b.lookups),
    ];
    for (p, (name, value)) in metrics.iter().enumerate() {
        let x0 = left + p as f64 * (panel_w + 60.0);
        // Log scale, one decade per tick: the groups span three orders of magnitude.
        let max = bars.iter().map(value).fold(1.0f64, f64::max);
        let min = bars
            .iter()
            .map(value)
            .filter(|v| *v > 0.0)
            .fold(max, f64::min);
        let lo = min.log10().floor().min(max.log10().ceil() - 1.0);
        let hi = max.log10().ceil();
        let scale = |v: f64| -> f64 {
            if v <= 0.0 {
                0.0
            } else {
                (panel_h * (v.log10() - lo) / (hi - lo)).clamp(0.0, panel_h)
            }
        };
        let _ = writeln!(
            out,
            r#"<text x="{x0}" y="{}" font-weight="bold">{name} (log scale)</text>"#,
            top - 8.0
        );
        let _ = writeln!(
            out,
            r#"<line x1="{x0}" y1="{}" x2="{}" y2="{}" stroke="black"/>"#,
            top + panel_h,
            x0 + panel_w,
            top + panel_h
        );
        let mut decade = lo;
        while decade <= hi {
            let v = 10f64.powf(decade);
            let y = top + panel_h - scale(v);
            let label = if v >= 1e6 {
                format!("{}M", v / 1e6)
            } else {
                format!("{}k", v / 1e3)
            };
            let _ = writeln!(
                out,
                r##"<line x1="{x0}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{label}</text>"##,
                x0 + panel_w,
                x0 - 4.0,
                y + 4.0
            );
            decade += 1.0;
        }
        let group_w = panel_w / sizes.len().max(1) as f64;
        let bar_w = (group_w - 20.0) / labels.len().max(1) as f64;
        for (g, n) in sizes.iter().enumerate() {
            let gx = x0 + g as f64 * group_w + 10.0;
            for (i, label) in labels.iter().enumerate() {
                let Some(b) = bars.iter().find(|b| b.n == *n && b.label == *label) else {
                    continue;
                };
                let h = scale(value(b));
                let color = PALETTE.get(i % PALETTE.len()).copied().unwrap_or("#333");
                let _ = writeln!(
                    out,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{} n={n}: {:.0}</title></rect>"#,
                    gx + i as f64 * bar_w,
                    top + panel_h - h,
                    (bar_w - 2.0).max(1.0),
                    h,
                    escape(label),
                    value(b)
                );
            }
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">n = {n}</text>"#,
                gx + (group_w - 20.0) / 2.0,
                top + panel_h + 16.0
            );
        }
    }
    for (i, label) in labels.iter().enumerate() {
        let y = top + panel_h + 40.0 + 18.0 * i as f64;
        let color = PALETTE.get(i % PALETTE.len()).copied().unwrap_or("#333");
        let _ = writeln!(
            out,
            r#"<rect x="{left}" y="{}" width="12" height="12" fill="{color}"/><text x="{}" y="{}">{}</text>"#,
            y - 10.0,
            left + 18.0,
            y,
            escape(label)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_one_bar_per_store_and_size() {
        let bars = vec![
            Bar {
                label: "a".into(),
                n: 10,
                puts: 1.0e6,
                lookups: 2.0e6,
            },
            Bar {
                label: "b<x>".into(),
                n: 10,
                puts: 2.0e6,
                lookups: 1.0e6,
            },
            Bar {
                label: "a".into(),
                n: 20,
                puts: 3.0e6,
                lookups: 4.0e6,
            },
        ];
        let s = svg("t", &bars);
        assert!(s.starts_with("<svg"));
        assert!(s.trim_end().ends_with("</svg>"));
        // 3 bars in each of the 2 panels, plus 2 legend swatches and the background.
        assert_eq!(s.matches("<rect").count(), 3 * 2 + 2 + 1);
        assert!(s.contains("b&lt;x&gt;"));
        assert!(!s.contains("b<x>"));
    }
}
