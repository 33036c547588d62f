//! The raw result records, and the statistics and number formats every
//! section uses.

use std::collections::BTreeMap;
use std::path::Path;

/// One result line: its fields, and the free-text reason of a failure.
#[derive(Debug, Default)]
pub struct Rec {
    pub fields: BTreeMap<String, String>,
    pub reason: Option<String>,
}

impl Rec {
    pub fn parse(line: &str) -> Rec {
        let (head, reason) = match line.find(" reason=") {
            Some(i) => (&line[..i], Some(line[i + 8..].trim().to_string())),
            None => (line, None),
        };
        let fields = head
            .split_whitespace()
            .filter_map(|t| t.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Rec { fields, reason }
    }

    pub fn s(&self, k: &str) -> &str {
        self.fields.get(k).map_or("", String::as_str)
    }

    pub fn f(&self, k: &str) -> f64 {
        self.s(k).parse().unwrap_or(f64::NAN)
    }

    pub fn ok(&self) -> bool {
        self.s("ok") == "1"
    }
}

pub fn read_recs(path: &Path) -> Vec<Rec> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(Rec::parse)
        .collect()
}

pub fn read_meta(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Median, minimum and maximum.
#[derive(Clone, Copy, Debug)]
pub struct Stat {
    pub med: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

pub fn stat(v: Vec<f64>) -> Option<Stat> {
    stat_keeping(v, |x| x.is_finite())
}

/// [`stat`] over the figures `keep` accepts (`stat` keeps the finite
/// ones).
pub fn stat_keeping(mut v: Vec<f64>, keep: impl Fn(&f64) -> bool) -> Option<Stat> {
    v.retain(|x| keep(x));
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Stat {
        med,
        min: v[0],
        max: v[n - 1],
        n,
    })
}

/// Before/after pairs (records with `build=now` and `build=base`, paired
/// by `rep`; see the `build~now,base` rows of bench/cells.txt): the median of the pairs'
/// ratios now / base of `key`, over the records `select` picks. Each pair
/// ran back to back, so a drift of the machine falls on both.
pub fn pair_ratio(
    recs: &[Rec],
    select: &dyn Fn(&Rec) -> bool,
    key: &dyn Fn(&Rec) -> f64,
) -> Option<Stat> {
    let of = |build: &str| -> Vec<(String, f64)> {
        recs.iter()
            .filter(|r| r.ok() && r.s("build") == build && select(r))
            .map(|r| (r.s("rep").to_string(), key(r)))
            .collect()
    };
    let (now, base) = (of("now"), of("base"));
    stat(
        now.iter()
            .filter_map(|(rep, x)| base.iter().find(|(r, _)| r == rep).map(|(_, y)| x / y))
            .collect(),
    )
}

/// Of such pairs, `key` over the records of one build (`now` or `base`)
/// that `select` picks.
pub fn build_stat(
    recs: &[Rec],
    select: &dyn Fn(&Rec) -> bool,
    build: &str,
    key: &dyn Fn(&Rec) -> f64,
) -> Option<Stat> {
    stat(
        recs.iter()
            .filter(|r| r.ok() && r.s("build") == build && select(r))
            .map(key)
            .collect(),
    )
}

/// A number with about three significant digits.
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// A tick label without trailing zeros: 0.1, 1, 10.
pub fn trim_num(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Integer with thousands separators.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn cell(s: Option<Stat>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{} ({}–{})", num(s.med), num(s.min), num(s.max)),
        Some(s) => format!("{} (1 run)", num(s.med)),
        None => "—".into(),
    }
}

/// What the first touch of anonymous memory cost (`firsttouch.txt`, from
/// bench/src/bin/firsttouch.rs): of the run's measurements, the one that
/// found the coldest memory against its warm figure.
pub struct FirstTouch {
    /// When it was measured: `start` of the run, or before the `sleepers`.
    pub when: String,
    /// How many measurements the run made.
    pub count: usize,
    /// MiB the cold pass touched.
    pub touched_mb: f64,
    /// MiB of those it found cold.
    pub cold_mb: f64,
    /// Seconds the program waited before the cold pass.
    pub settle_s: f64,
    /// Seconds per GiB touched, of memory left idle for a while.
    pub cold_s_per_gib: f64,
    /// Seconds per GiB touched, of memory freed just before.
    pub warm_s_per_gib: f64,
    /// System time per minor page fault (µs), cold.
    pub cold_us: f64,
    /// System time per minor page fault (µs), warm.
    pub warm_us: f64,
}

impl FirstTouch {
    /// The measurement of `recs` with the largest cold/warm ratio, if the
    /// run made one.
    pub fn from_recs(recs: &[Rec]) -> Option<FirstTouch> {
        let valid: Vec<&Rec> = recs
            .iter()
            .filter(|r| {
                let (c, w) = (r.f("cold_sys_us_per_fault"), r.f("warm_sys_us_per_fault"));
                c.is_finite() && w.is_finite() && w > 0.0
            })
            .collect();
        let ratio = |r: &Rec| r.f("cold_sys_us_per_fault") / r.f("warm_sys_us_per_fault");
        let r = valid
            .iter()
            .copied()
            .max_by(|a, b| ratio(a).total_cmp(&ratio(b)))?;
        let ft = FirstTouch {
            when: r.s("when").to_string(),
            count: valid.len(),
            touched_mb: r.f("touched_mb"),
            cold_mb: r.f("cold_mb"),
            settle_s: r.f("settle_s"),
            cold_s_per_gib: r.f("cold_s_per_gib"),
            warm_s_per_gib: r.f("warm_s_per_gib"),
            cold_us: r.f("cold_sys_us_per_fault"),
            warm_us: r.f("warm_sys_us_per_fault"),
        };
        [ft.cold_s_per_gib, ft.warm_s_per_gib, ft.cold_us, ft.warm_us]
            .iter()
            .all(|v| v.is_finite())
            .then_some(ft)
    }

    /// What a cold page fault costs more than a warm one (µs of system
    /// time), when cold costs at least twice warm: below that the two are
    /// not told apart reliably (a busy machine moves the warm figure too),
    /// and no run is called cold.
    pub fn extra_us(&self) -> Option<f64> {
        (self.cold_us >= 2.0 * self.warm_us).then_some(self.cold_us - self.warm_us)
    }
}
