//! The sleepers plot (SVG, drawn with plotters).

use std::path::Path;

use plotters::prelude::*;

use crate::data::{trim_num, Rec, Stat};
use crate::sleepers::{runtimes_present, sleeper_cell, NS};

pub fn color(rt: &str) -> RGBColor {
    match rt {
        "yieldloop" => RGBColor(214, 39, 40),
        "tokio" => RGBColor(31, 119, 180),
        "may" => RGBColor(44, 160, 44),
        "threads" => RGBColor(148, 103, 189),
        "asyncio" => RGBColor(255, 127, 14),
        "go" => RGBColor(23, 190, 207),
        "floor" => RGBColor(40, 40, 40),
        _ => RGBColor(90, 90, 90),
    }
}

pub fn n_label(n: f64) -> String {
    match n.round() as u64 {
        0 => String::new(),
        n if n >= 1_000_000 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

pub fn plot(recs: &[Rec], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let rts = runtimes_present(recs);
    // (runtime, [(n, wall median, min, max, overhead ms median, min, max)])
    type Row = (f64, Stat, Stat);
    let series: Vec<(&str, Vec<Row>)> = rts
        .iter()
        .map(|&rt| {
            let pts = NS
                .iter()
                .filter_map(|&n| {
                    let c = sleeper_cell(recs, rt, n);
                    Some((n as f64, c.wall?, c.over_ms?))
                })
                .collect();
            (rt, pts)
        })
        .collect();
    let wall_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|r| r.1.max))
        .fold(1.0f64, f64::max);
    let (o_lo, o_hi) = series
        .iter()
        .flat_map(|(_, p)| p.iter().flat_map(|r| [r.2.min, r.2.max]))
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (o_lo, o_hi) = if o_lo <= o_hi {
        (
            10f64.powf(o_lo.log10().floor()),
            10f64.powf(o_hi.log10().ceil()),
        )
    } else {
        (0.01, 1000.0)
    };

    let root = SVGBackend::new(path, (1200, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    let (body, _notes_area) = body.split_vertically(470);
    title.titled(
        "Sleepers: N tasks each sleep 1 s, then all are joined (median of the warm runs, bars: min–max)",
        ("sans-serif", 20),
    )?;
    let (left, right) = body.split_horizontally(600);
    let x_range = || (0.5f64..2.0e6f64).log_scale();

    // Left: total wall time, linear.
    let mut c = ChartBuilder::on(&left)
        .caption("Wall time (s)", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(x_range(), 0.0f64..(wall_max * 1.08).ceil())?;
    c.configure_mesh()
        .x_desc("N (tasks), log scale")
        .y_desc("seconds")
        .x_label_formatter(&|x| n_label(*x))
        .draw()?;
    for (rt, pts) in &series {
        let col = color(rt);
        c.draw_series(LineSeries::new(
            pts.iter().map(|r| (r.0, r.1.med)),
            col.stroke_width(2),
        ))?
        .label(*rt)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        c.draw_series(
            pts.iter()
                .map(|r| Circle::new((r.0, r.1.med), 3, col.filled())),
        )?;
        c.draw_series(
            pts.iter()
                .map(|r| PathElement::new(vec![(r.0, r.1.min), (r.0, r.1.max)], col)),
        )?;
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;

    // Right: overhead above the 1 s sleep, log scale.
    let mut c = ChartBuilder::on(&right)
        .caption("Overhead above 1 s (ms), log scale", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(x_range(), (o_lo..o_hi).log_scale())?;
    c.configure_mesh()
        .x_desc("N (tasks), log scale")
        .y_desc("milliseconds")
        .x_label_formatter(&|x| n_label(*x))
        .y_label_formatter(&|y| trim_num(*y))
        .draw()?;
    let clamp = |v: f64| v.max(o_lo);
    for (rt, pts) in &series {
        let col = color(rt);
        c.draw_series(LineSeries::new(
            pts.iter().map(|r| (r.0, clamp(r.2.med))),
            col.stroke_width(2),
        ))?
        .label(*rt)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        c.draw_series(
            pts.iter()
                .map(|r| Circle::new((r.0, clamp(r.2.med)), 3, col.filled())),
        )?;
        c.draw_series(
            pts.iter()
                .map(|r| PathElement::new(vec![(r.0, clamp(r.2.min)), (r.0, clamp(r.2.max))], col)),
        )?;
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    // Cells that failed or were not run, under the charts.
    let mut notes = Vec::new();
    for &rt in &rts {
        let failed: Vec<String> = NS
            .iter()
            .filter(|&&n| {
                let c = sleeper_cell(recs, rt, n);
                c.wall.is_none() && c.failure.is_some()
            })
            .map(|&n| n_label(n as f64))
            .collect();
        if !failed.is_empty() {
            notes.push(format!("{rt} failed at N = {}", failed.join(", ")));
        }
        let skipped: Vec<String> = NS
            .iter()
            .filter(|&&n| !sleeper_cell(recs, rt, n).tried)
            .map(|&n| n_label(n as f64))
            .collect();
        if !skipped.is_empty() {
            notes.push(format!("{rt} not run at N = {}", skipped.join(", ")));
        }
    }
    if !notes.is_empty() {
        root.draw(&Text::new(
            format!("Missing points: {}.", notes.join("; ")),
            (20, 500),
            ("sans-serif", 13).into_font().color(&RGBColor(90, 90, 90)),
        ))?;
    }
    root.present()?;
    Ok(())
}
