//! The crate's modules stand in layers (see the crate docs' `# Layout`):
//! each may use only modules below it. This test reads the sources and
//! fails on any `crate::` path that points sideways or up, which also rules
//! out import cycles among the modules.

use std::fs;
use std::path::Path;

/// Every top-level module and its rank: a module may use only modules of
/// a strictly lower rank (and its own submodules).
const RANKS: &[(&str, u32)] = &[
    // 1. Plain data.
    ("protocol", 0),
    ("failure", 0),
    // 2. Mechanisms.
    ("slow_task", 1),
    ("stack", 1),
    ("timer", 1),
    ("trace", 1),
    ("reactor", 1),
    // 3. Tasks and their scheduler.
    ("task", 2),
    ("scheduler", 3),
    // 4. The blocking-style surface.
    ("timeout", 4),
    ("task_local", 4),
    ("suspend", 5),
    ("time", 6),
    ("park", 6),
    ("spawn", 6),
    // Pausing I/O: registers with the scheduler, pauses through `suspend`.
    ("io", 6),
    ("scope", 7),
    ("gather", 8),
    ("handoff", 7),
    ("bridge", 7),
    // Name lookups run on the blocking pool.
    ("net", 9),
    ("signal", 7),
    ("sync", 7),
    ("blocking", 8),
    ("runtime", 8),
    // Child processes: pipes on `io`, waits on the pool.
    ("process", 9),
    // 5. The public faces.
    ("raw", 11),
    ("diag", 11),
    ("lib", 12),
];

fn rank(module: &str) -> Option<u32> {
    RANKS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

/// The top-level module a source file belongs to.
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The code of a line, without a trailing `//` comment (doc comments and
/// comments name items freely, in links).
fn code_of(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with("//") {
        return "";
    }
    match line.find("//") {
        Some(i) if !line[..i].contains('"') => &line[..i],
        _ => line,
    }
}

/// The module names that follow `crate::` in `code`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        out.push(name);
    }
    out
}

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// No module uses one of its own layer or above, nor an item through the
/// crate root's re-exports.
#[test]
fn no_module_uses_a_module_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    assert!(
        files.len() > 20,
        "sources not found under {}",
        src.display()
    );
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let module = module_of(rel);
        let Some(own) = rank(&module) else {
            wrong.push(format!("{}: module `{module}` has no layer", rel.display()));
            continue;
        };
        let text = fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for target in crate_paths(code_of(line)) {
                if target == module {
                    continue;
                }
                match rank(&target) {
                    Some(r) if r < own => {}
                    Some(r) => wrong.push(format!(
                        "{}:{}: `{module}` (layer rank {own}) uses `{target}` (rank {r})",
                        rel.display(),
                        n + 1
                    )),
                    None => wrong.push(format!(
                        "{}:{}: `crate::{target}` goes through the crate root",
                        rel.display(),
                        n + 1
                    )),
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

/// The checker itself finds paths, and skips comments.
#[test]
fn the_checker_reads_paths_and_skips_comments() {
    assert_eq!(
        crate_paths("use crate::protocol::{Op}; x($crate::failure::F)"),
        ["protocol", "failure"]
    );
    assert_eq!(code_of("    /// see [`x`](crate::scheduler)"), "");
    assert_eq!(
        code_of("let a = crate::timer::x(); // crate::spawn"),
        "let a = crate::timer::x(); "
    );
}
