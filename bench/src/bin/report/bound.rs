//! One row of the Targets table, and what its figure is held to: what
//! each section that has targets writes its rows with, below the table
//! that gathers them (`targets`).

use std::fmt::Write as _;

use crate::data::num;

/// One target: what is compared, yieldloop's figure, the yardstick's, and
/// how far yieldloop may be from it (a ratio yieldloop / yardstick).
pub struct Target {
    pub what: &'static str,
    pub ours: Option<f64>,
    pub theirs: Option<f64>,
    pub yardstick: &'static str,
    pub max_ratio: f64,
    pub unit: &'static str,
    /// The ratio from runs made in pairs (the median of the pairs'
    /// ratios), where the target is judged on that rather than on the
    /// ratio of the two medians.
    pub paired: Option<f64>,
}

/// One row of the Targets table (same columns: target, yieldloop's figure,
/// yardstick, its figure, ratio, allowed, met).
pub fn row(w: &mut String, what: &str, ours: Option<f64>, unit: &str, bound: Bound) {
    let Some(ours) = ours else {
        let (yard, allowed) = match bound {
            Bound::Ratio(name, _, r) | Bound::Paired { name, max: r, .. } => {
                (name.to_string(), format!("≤ {r:.2}"))
            }
            Bound::Limit { limit: l, .. } => ("fixed limit".into(), format!("≤ {} {unit}", num(l))),
        };
        let _ = writeln!(w, "| {what} | | {yard} | | | {allowed} | not measured |");
        return;
    };
    match bound {
        Bound::Paired {
            name,
            theirs,
            ratio,
            max,
        } => {
            let met = if ratio <= max { "yes" } else { "no" };
            let _ = writeln!(
                w,
                "| {what} | {} {unit} | {name} | {} {unit} | {ratio:.3} (median of pairs) | ≤ {max:.2} | {met} |",
                num(ours),
                num(theirs)
            );
        }
        Bound::Ratio(name, Some(theirs), max) if theirs > 0.0 => {
            let ratio = ours / theirs;
            let met = if ratio <= max { "yes" } else { "no" };
            // An infinite figure (a ping never answered) has no number.
            let fig = |x: f64| {
                if x.is_infinite() {
                    "no answer".to_string()
                } else {
                    format!("{} {unit}", num(x))
                }
            };
            let ratio = if ratio.is_finite() {
                format!("{ratio:.2}")
            } else if ratio.is_nan() {
                "—".into()
            } else {
                "∞".into()
            };
            let _ = writeln!(
                w,
                "| {what} | {} | {name} | {} | {ratio} | ≤ {max:.2} | {met} |",
                fig(ours),
                fig(theirs)
            );
        }
        Bound::Ratio(name, _, max) => {
            let _ = writeln!(w, "| {what} | | {name} | | | ≤ {max:.2} | not measured |");
        }
        Bound::Limit {
            limit,
            name,
            theirs,
        } => {
            let met = if ours <= limit { "yes" } else { "no" };
            // Each cell with its own padding, so that an empty one is
            // `| |` as in the other rows.
            let (t, r) = match theirs {
                Some(t) if t > 0.0 => {
                    (format!(" {} {unit} ", num(t)), format!(" {:.2} ", ours / t))
                }
                Some(t) => (format!(" {} {unit} ", num(t)), " ".into()),
                None => (" ".into(), " ".into()),
            };
            let _ = writeln!(
                w,
                "| {what} | {} {unit} | {name} |{t}|{r}| ≤ {} {unit} | {met} |",
                num(ours),
                num(limit)
            );
        }
    }
}

/// What a target's figure is held to.
pub enum Bound {
    /// At most the yardstick's figure (named, if measured) times a ratio.
    Ratio(&'static str, Option<f64>, f64),
    /// At most a fixed amount, with a yardstick named beside it and its
    /// figure (when measured) for scale, not held to; see
    /// [`fixed`](Bound::fixed) for a limit with nothing beside it.
    Limit {
        limit: f64,
        name: &'static str,
        theirs: Option<f64>,
    },
    /// Measured in pairs against a yardstick: its figure, and the median
    /// of the pairs' ratios, which is held to `max`.
    Paired {
        name: &'static str,
        theirs: f64,
        ratio: f64,
        max: f64,
    },
}

impl Bound {
    /// At most `limit`, with no yardstick beside it.
    pub fn fixed(limit: f64) -> Bound {
        Bound::Limit {
            limit,
            name: "fixed limit",
            theirs: None,
        }
    }
}
