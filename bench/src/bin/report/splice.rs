//! Putting one regenerated section (and its Targets rows) into a page
//! written by an earlier run, for `report --section NAME` after a run of
//! that stage alone: the rest of the page stays as it was.

/// Where the `## ` section that starts at `from` ends in `page`.
fn end_of(page: &str, from: usize) -> usize {
    page[from + 1..]
        .find("\n## ")
        .map_or(page.len(), |i| from + 1 + i + 1)
}

/// Where the line `heading` starts in `page`, if it has it.
fn find(page: &str, heading: &str) -> Option<usize> {
    page.find(&format!("\n{heading}\n")).map(|i| i + 1)
}

/// `page` with the section under `heading` replaced by `section` (which
/// starts with that heading) or, where it has none, put after the section
/// under `after` (or before `## Commands`, or at the end).
pub fn section(page: &str, heading: &str, after: &str, section: &str) -> String {
    let (from, to) = match find(page, heading) {
        Some(s) => (s, end_of(page, s)),
        None => {
            let at = find(page, after)
                .map(|s| end_of(page, s))
                .or_else(|| find(page, "## Commands"))
                .unwrap_or(page.len());
            (at, at)
        }
    };
    format!("{}{}{}", &page[..from], section, &page[to..])
}

/// `page` with the Targets rows whose text starts with `| PREFIX` replaced
/// by `rows` (table rows, one per line), in the place of the first of
/// them, or added after the table's last row.
pub fn target_rows(page: &str, prefix: &str, rows: &str) -> String {
    let Some(start) = find(page, "## Targets") else {
        return page.to_string();
    };
    let end = end_of(page, start);
    let old = format!("| {prefix}");
    let mut lines: Vec<&str> = page[start..end].lines().collect();
    let at = lines.iter().position(|l| l.starts_with(&old));
    lines.retain(|l| !l.starts_with(&old));
    let at = match at {
        Some(i) => i,
        None => match lines.iter().rposition(|l| l.starts_with('|')) {
            Some(i) => i + 1,
            None => return page.to_string(),
        },
    };
    for (k, row) in rows.lines().enumerate() {
        lines.insert(at + k, row);
    }
    let mut table = lines.join("\n");
    table.push('\n');
    format!("{}{}{}", &page[..start], table, &page[end..])
}

#[cfg(test)]
mod tests {
    const PAGE: &str = "# B\n\n## Targets\n\n| a |\n| x 1 |\n| x 2 |\n| b |\n\n## One\n\nold\n\n## Commands\n\nc\n";

    #[test]
    fn a_section_is_replaced_or_put_after_its_neighbour() {
        let p = super::section(PAGE, "## One", "## Targets", "## One\n\nnew\n\n");
        assert!(p.contains("## One\n\nnew\n\n## Commands"), "{p}");
        assert!(!p.contains("old"), "{p}");
        let p = super::section(PAGE, "## Two", "## One", "## Two\n\nt\n\n");
        assert!(p.contains("old\n\n## Two\n\nt\n\n## Commands"), "{p}");
    }

    #[test]
    fn rows_are_replaced_in_place_or_added_last() {
        let p = super::target_rows(PAGE, "x ", "| x 9 |\n| x 8 |\n");
        assert!(p.contains("| a |\n| x 9 |\n| x 8 |\n| b |\n"), "{p}");
        let p = super::target_rows(PAGE, "y ", "| y 1 |\n");
        assert!(p.contains("| b |\n| y 1 |\n"), "{p}");
    }
}
