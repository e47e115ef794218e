//! An SVG chart of a run: for every workload, Cairn's throughput over each peer's, as
//! horizontal bars on a log scale around 1× (right of the line: Cairn is faster). Plain
//! SVG text with no dependencies, so the report renders anywhere.

use std::fmt::Write as _;

use cairn_harness::report::xml_escape as escape;

use crate::report::{find, human_size, large_by_size, select, stores, workloads, Report};
use crate::row::Row;

const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// One group of bars: a label and Cairn's ratio to each peer (`None`: not measured).
struct Group {
    label: String,
    ratios: Vec<Option<f64>>,
}

fn groups(report: &Report, peers: &[String]) -> Vec<Group> {
    let mut out = Vec::new();
    let mut push = |label: String, rows: &[&Row], workload: &str, metric: fn(&Row) -> f64| {
        let Some(cairn) = find(rows, "cairn", workload) else {
            return;
        };
        let ratios = peers
            .iter()
            .map(|p| {
                find(rows, p, workload)
                    .map(metric)
                    .filter(|&v| v > 0.0)
                    .map(|v| metric(cairn) / v)
            })
            .collect();
        out.push(Group { label, ratios });
    };
    let ordered = select(report, "ordered", Some(1), None);
    for w in &workloads(&ordered) {
        push(w.clone(), &ordered, w, |r| r.ops_per_sec);
    }
    for (size, at) in large_by_size(report) {
        for w in ["fillrandom", "readrandom"] {
            push(format!("{w} {}", human_size(size)), &at, w, |r| {
                r.mb_per_sec
            });
        }
    }
    out
}

/// The chart of `report` as an SVG document.
pub fn ratios(report: &Report) -> String {
    let all: Vec<&Row> = report.rows.iter().collect();
    let peers: Vec<String> = stores(&all).into_iter().filter(|s| s != "cairn").collect();
    let groups = groups(report, &peers);
    let (left, right, top) = (170.0, 40.0, 70.0);
    let plot_w = 640.0;
    let bar_h = 7.0;
    let group_h = bar_h * peers.len().max(1) as f64 + 10.0;
    let height = top + group_h * groups.len() as f64 + 50.0;
    let width = left + plot_w + right;
    // log2 scale from 1/16x to 64x.
    let (lo, hi) = (-4.0f64, 6.0f64);
    let x = |ratio: f64| left + (ratio.log2().clamp(lo, hi) - lo) / (hi - lo) * plot_w;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="18" font-size="14" font-weight="bold">Cairn's throughput ÷ each peer's (log scale; right of 1×: Cairn is faster)</text>"#
    );
    for (i, p) in peers.iter().enumerate() {
        let color = PALETTE.get(i % PALETTE.len()).copied().unwrap_or("#000");
        let lx = left + (i % 6) as f64 * 105.0;
        let ly = 34.0 + (i / 6) as f64 * 14.0;
        let _ = writeln!(
            s,
            r#"<rect x="{lx}" y="{:.0}" width="10" height="10" fill="{color}"/><text x="{:.0}" y="{:.0}">{}</text>"#,
            ly - 9.0,
            lx + 14.0,
            ly,
            escape(p)
        );
    }
    for e in lo as i32..=hi as i32 {
        let gx = x(2f64.powi(e));
        let label = if e >= 0 {
            format!("{}×", 1u64 << e)
        } else {
            format!("1/{}×", 1u64 << -e)
        };
        let stroke = if e == 0 { "#000" } else { "#ddd" };
        let _ = writeln!(
            s,
            r#"<line x1="{gx:.1}" y1="{top}" x2="{gx:.1}" y2="{:.0}" stroke="{stroke}"/><text x="{gx:.1}" y="{:.0}" text-anchor="middle">{label}</text>"#,
            height - 40.0,
            height - 26.0
        );
    }
    for (g, group) in groups.iter().enumerate() {
        let gy = top + g as f64 * group_h;
        let _ = writeln!(
            s,
            r#"<text x="{:.0}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 6.0,
            gy + group_h / 2.0,
            escape(&group.label)
        );
        for (i, r) in group.ratios.iter().enumerate() {
            let Some(r) = r else { continue };
            let color = PALETTE.get(i % PALETTE.len()).copied().unwrap_or("#000");
            let (x0, x1) = (x(1.0), x(*r));
            let _ = writeln!(
                s,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{}: {:.2}×</title></rect>"#,
                x0.min(x1),
                gy + 5.0 + i as f64 * bar_h,
                (x1 - x0).abs().max(0.5),
                bar_h - 1.0,
                escape(peers.get(i).map_or("", String::as_str)),
                r
            );
        }
    }
    let _ = writeln!(s, "</svg>");
    s
}
