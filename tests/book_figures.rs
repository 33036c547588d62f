//! Every benchmark figure the book or the README quotes is checked against
//! the Benchmarks page (`docs/benchmarks.md`, which `bench/run.sh`
//! regenerates), so that a regeneration either comes with the prose
//! updated or fails here.
//!
//! A quoted figure is preceded by a comment that says where it comes from:
//!
//! ```text
//! <!-- bench-check: Wall time, first spawn to last join | yieldloop | N = 100,000 | 1.30 -->
//! <!-- bench-check: Overhead above the 1 s sleep | floor | N = 1,000,000 | 2394 | 2.39 s -->
//! ```
//!
//! The fields are: the start of the heading of a table on the page (or of
//! the bold label that opens the paragraph before it), the
//! row (its first cell), the column (its header), the figure as the page
//! has it (the number a cell starts with: the median, before its range),
//! and, where the prose writes it differently (another unit, rounded), how
//! the prose writes it. The check fails when the page's figure differs, and
//! when the prose's form is not in the 40 lines that follow the comment
//! (comments left out), so several comments may stand before one table.

use std::fs;
use std::path::{Path, PathBuf};

/// One `bench-check` comment.
#[derive(Debug)]
struct Claim {
    file: String,
    line: usize,
    heading: String,
    row: String,
    column: String,
    figure: String,
    written: String,
    /// The text after the comment that the written form must appear in.
    following: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The files that may quote figures: the README and the book's chapters.
fn quoting_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let book = root().join("docs/src");
    let mut chapters: Vec<PathBuf> = fs::read_dir(&book)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    files
}

fn claims_in(path: &Path, text: &str) -> Vec<Claim> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim().strip_prefix("<!-- bench-check:") else {
            continue;
        };
        let body = rest
            .trim()
            .strip_suffix("-->")
            .unwrap_or_else(|| panic!("{}:{}: unclosed comment", path.display(), i + 1))
            .trim();
        let fields: Vec<&str> = body.split('|').map(str::trim).collect();
        assert!(
            (4..=5).contains(&fields.len()),
            "{}:{}: a bench-check has 4 or 5 fields: {line}",
            path.display(),
            i + 1
        );
        let following: Vec<&str> = lines[i + 1..]
            .iter()
            .take(40)
            .filter(|l| !l.trim().starts_with("<!--"))
            .copied()
            .collect();
        out.push(Claim {
            file: path.display().to_string(),
            line: i + 1,
            heading: fields[0].to_string(),
            row: fields[1].to_string(),
            column: fields[2].to_string(),
            figure: fields[3].to_string(),
            written: fields.get(4).unwrap_or(&fields[3]).to_string(),
            following: following.join("\n"),
        });
    }
    out
}

/// The cells of a markdown table row, trimmed.
fn cells(line: &str) -> Vec<String> {
    let line = line.trim();
    let inner = line.strip_prefix('|').unwrap_or(line);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// The cell of `page`'s first table under a heading starting with
/// `heading`, in `row` and `column`; or why there is none.
fn cell(page: &str, heading: &str, row: &str, column: &str) -> Result<String, String> {
    let lines: Vec<&str> = page.lines().collect();
    // A heading, or a paragraph that opens with a bold label (`**Skewed
    // fan-out**: ...`), for a page section with several tables.
    let start = lines
        .iter()
        .position(|l| {
            (l.starts_with('#') && l.trim_start_matches('#').trim().starts_with(heading))
                || l.strip_prefix("**").is_some_and(|b| b.starts_with(heading))
        })
        .ok_or_else(|| format!("no heading starting with {heading:?}"))?;
    let table_at = lines[start + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('|'))
        .map(|i| i + start + 1)
        .ok_or_else(|| format!("no table under {heading:?}"))?;
    let header = cells(lines[table_at]);
    let col = header
        .iter()
        .position(|h| h == column)
        .ok_or_else(|| format!("no column {column:?} under {heading:?}: {header:?}"))?;
    for l in lines[table_at + 2..]
        .iter()
        .take_while(|l| l.trim_start().starts_with('|'))
    {
        let c = cells(l);
        let first = c.first().map(String::as_str).unwrap_or("");
        if first == row || first.trim_matches('`') == row {
            return c
                .get(col)
                .cloned()
                .ok_or_else(|| format!("row {row:?} has no column {col}"));
        }
    }
    Err(format!("no row {row:?} under {heading:?}"))
}

/// The number a cell starts with: `1.30 (1.30–1.38)` gives `1.30`.
fn figure_of(cell: &str) -> &str {
    cell.split([' ', '(']).next().unwrap_or(cell)
}

fn check(page: &str, claim: &Claim) -> Result<(), String> {
    let found = cell(page, &claim.heading, &claim.row, &claim.column)?;
    let figure = figure_of(&found);
    if figure != claim.figure {
        return Err(format!(
            "the page has {figure} ({found}) where the book has {}",
            claim.figure
        ));
    }
    if !claim.following.contains(&claim.written) {
        return Err(format!(
            "{:?} is not in the text after the comment",
            claim.written
        ));
    }
    Ok(())
}

#[test]
fn every_quoted_figure_is_the_benchmarks_pages() {
    let page = fs::read_to_string(root().join("docs/benchmarks.md")).unwrap();
    let mut claims = Vec::new();
    for path in quoting_files() {
        let text = fs::read_to_string(&path).unwrap();
        claims.extend(claims_in(&path, &text));
    }
    assert!(
        claims.len() >= 20,
        "only {} bench-check comments: the book's figures are not checked",
        claims.len()
    );
    let wrong: Vec<String> = claims
        .iter()
        .filter_map(|c| {
            check(&page, c).err().map(|e| {
                format!(
                    "{}:{}: {} / {} / {}: {e}",
                    c.file, c.line, c.heading, c.row, c.column
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "figures that differ from docs/benchmarks.md:\n{}",
        wrong.join("\n")
    );
}

/// The checker finds a cell by heading, row and column, takes the median,
/// and reports a figure that changed and prose that does not say it.
#[test]
fn the_checker_reads_tables_and_catches_changes() {
    let page = "## A\n\n### Wall time (s): median\n\nintro\n\n| runtime | N = 1 | N = 10 |\n|---|---:|---:|\n| yieldloop | 1.00 (1.00–1.01) | 1.30 (1.29–1.38) |\n| `go` | 1.00 | 1.41 (1.40–1.50) |\n\n### Other\n\n| x | y |\n|---|---|\n| a | b |\n";
    assert_eq!(
        cell(page, "Wall time", "yieldloop", "N = 10").as_deref(),
        Ok("1.30 (1.29–1.38)")
    );
    assert_eq!(
        cell(page, "Wall time", "go", "N = 10").as_deref(),
        Ok("1.41 (1.40–1.50)")
    );
    assert!(cell(page, "Wall time", "tokio", "N = 10").is_err());
    assert!(cell(page, "Wall time", "yieldloop", "N = 5").is_err());
    assert!(cell(page, "Nothing", "yieldloop", "N = 10").is_err());
    let book = "<!-- bench-check: Wall time | yieldloop | N = 10 | 1.30 -->\nIt took 1.30 s.\n<!-- bench-check: Wall time | go | N = 10 | 1.41 | 1.4 s -->\nGo: 1.4 s.\n<!-- bench-check: Wall time | go | N = 10 | 1.39 -->\nGo: 1.39 s.\n<!-- bench-check: Wall time | yieldloop | N = 10 | 1.30 | 1.3 seconds -->\nIt took 1.30 s.\n";
    let claims = claims_in(Path::new("book.md"), book);
    assert_eq!(claims.len(), 4);
    assert!(check(page, &claims[0]).is_ok());
    assert!(check(page, &claims[1]).is_ok());
    assert!(check(page, &claims[2])
        .unwrap_err()
        .contains("the page has 1.41"));
    assert!(check(page, &claims[3])
        .unwrap_err()
        .contains("not in the text"));
}
