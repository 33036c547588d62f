//! The crate's modules stand in layers (see the crate docs' `# Layout`):
//! each may use only modules of a lower rank. This test reads the sources
//! and fails
//!
//! - on any path (`crate::`, `super::`, `self::`, each resolved to the
//!   module it names, a module the root re-exports whole, such as
//!   `task_local`, to the folder it lives in) that points from one
//!   top-level module to another of its own rank or above, which also
//!   rules out cycles among them;
//! - on any cycle of imports between the files of one folder (`a.rs` uses
//!   `b.rs`, which uses `a.rs`), which the ranks do not see;
//! - when the `# Layout` list in `src/lib.rs` and the ranks here disagree.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One layer of the crate: its name as the crate docs give it, and its
/// modules in ranks, lowest first. A module may use only modules of a
/// strictly lower rank (and its own submodules); ranks count on from one
/// layer to the next.
struct Layer {
    name: &'static str,
    ranks: &'static [&'static [&'static str]],
}

const LAYERS: &[Layer] = &[
    Layer {
        name: "The platform",
        ranks: &[&["sys"]],
    },
    Layer {
        name: "Plain data",
        ranks: &[&["protocol"]],
    },
    Layer {
        name: "Mechanisms",
        ranks: &[&["reactor", "stack"]],
    },
    Layer {
        name: "Tasks and their scheduler",
        ranks: &[
            // The scheduler holds what it runs and keeps (the tasks'
            // memory, the deadline heap) and what reports on it (the
            // counters and dump requests, the trace, the slow-task watch)
            // in files of its own.
            &["scheduler"],
            // What a task does on it: pause (narrowed to a timeout scope,
            // charged to the budget), park, spawn and join, scopes,
            // task-locals, and `raw`, the pauses as a public protocol.
            &["task"],
        ],
    },
    Layer {
        name: "The blocking-style surface",
        ranks: &[
            // Pausing I/O registers with the scheduler and pauses through
            // `task`, like the timers beside it.
            &["time", "io"],
            // The signal listener waits on `io`; the bridges park tasks
            // and spawn them, as the channels do.
            &["sync", "interop"],
            // Workers hand results back, name lookups and child exits
            // wait on the blocking pool, as the intercepted `getaddrinfo`
            // (feature `hook`) does: all through `interop`.
            &["runtime", "net", "process", "hook"],
        ],
    },
    Layer {
        name: "The public faces",
        ranks: &[&["diag"], &["lib"]],
    },
];

/// The rank of each top-level module.
fn ranks() -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    let groups = LAYERS.iter().flat_map(|l| l.ranks.iter());
    for (rank, group) in groups.enumerate() {
        for module in group.iter() {
            assert!(
                out.insert(*module, rank).is_none(),
                "`{module}` ranked twice"
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Reading the sources.

/// `text` with comments (doc comments included: they name items freely,
/// in links and examples), string and character literals blanked out;
/// line breaks are kept, so offsets still give line numbers.
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (i == 0 || !ident(c[i - 1]) || c[i - 1] == 'b')
            && matches!(next, Some('"') | Some('#'))
            && c[i + 1..].iter().find(|&&h| h != '#') == Some(&'"')
        {
            // A raw string: r"..", r#".."#, br"..".
            let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
            let close: Vec<char> = std::iter::once('"')
                .chain((0..hashes).map(|_| '#'))
                .collect();
            let mut j = i + 2 + hashes;
            while j < c.len() && !c[j..].starts_with(&close) {
                j += 1;
            }
            let end = (j + close.len()).min(c.len());
            for &ch in &c[i..end] {
                blank(&mut out, ch);
            }
            i = end;
        } else if c[i] == '"' {
            blank(&mut out, c[i]);
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            if i < c.len() {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '\'' && (next == Some('\\') || c.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\u{7b}'); a lifetime ('a)
            // has no closing quote and is left alone.
            let mut j = i + 1;
            if c[j] == '\\' {
                j += 2;
            } else {
                j += 1;
            }
            while j < c.len() && c[j] != '\'' {
                j += 1;
            }
            let end = (j + 1).min(c.len());
            for &ch in &c[i..end] {
                blank(&mut out, ch);
            }
            i = end;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// A token of stripped code and the line it is on.
#[derive(Debug, Clone, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

/// Identifiers (with `$crate` as one), `::`, and single punctuation marks.
fn tokens(code: &str) -> Vec<Token> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' || (ch == '$' && c.get(i + 1) == Some(&'c')) {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Token {
                text: c[start..i].iter().collect(),
                line,
            });
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: ch.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// True for a token that starts a path relative to a module.
fn path_start(t: &str) -> bool {
    matches!(t, "crate" | "$crate" | "super" | "self")
}

/// Reads the path at `toks[*i]` (after its first segment has been read),
/// expanding `{..}` groups: each full path it names, `*` for a glob.
/// `prefix` holds the segments read so far, as written.
fn read_tree(toks: &[Token], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        if toks.get(*i).map(|t| t.text.as_str()) != Some("::") {
            out.push(path);
            return;
        }
        *i += 1;
        match toks.get(*i).map(|t| t.text.as_str()) {
            Some("{") => {
                *i += 1;
                loop {
                    match toks.get(*i).map(|t| t.text.as_str()) {
                        None => return,
                        Some("}") => {
                            *i += 1;
                            return;
                        }
                        Some(",") => *i += 1,
                        Some("self") => {
                            out.push(path.clone());
                            *i += 1;
                        }
                        Some(_) => {
                            let mut inner = path.clone();
                            inner.push(toks[*i].text.clone());
                            *i += 1;
                            read_tree(toks, i, inner, out);
                            // `a as b`: the alias names no module.
                            if toks.get(*i).map(|t| t.text.as_str()) == Some("as") {
                                *i += 2;
                            }
                        }
                    }
                }
            }
            Some("*") => {
                path.push("*".into());
                *i += 1;
                out.push(path);
                return;
            }
            Some(t) if t.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                path.push(t.to_string());
                *i += 1;
            }
            _ => {
                out.push(path);
                return;
            }
        }
    }
}

/// Resolves a path as written (`super::super::x::y`) in module `base` (the
/// path of the module the code is in, from the crate root) to the path
/// from the crate root; `None` for a `super` above the root.
fn resolve(base: &[String], written: &[String]) -> Option<Vec<String>> {
    let mut segs = written.iter().peekable();
    let mut abs: Vec<String> = match segs.next().map(String::as_str) {
        Some("crate") | Some("$crate") => Vec::new(),
        Some("self") => base.to_vec(),
        Some("super") => {
            let mut b = base.to_vec();
            b.pop()?;
            b
        }
        _ => return None,
    };
    while segs.peek().map(|s| s.as_str()) == Some("super") {
        segs.next();
        abs.pop()?;
    }
    abs.extend(segs.cloned());
    Some(abs)
}

/// One path used in a source file, resolved.
#[derive(Debug, Clone, PartialEq)]
struct Use {
    line: usize,
    /// As written, for messages.
    written: String,
    /// From the crate root.
    target: Vec<String>,
}

/// The module-relative paths in the stripped code of a file whose module
/// is `module`, resolved; inline `mod name { .. }` blocks are followed, so
/// `super::` inside one names the file's own module.
fn uses(module: &[String], code: &str) -> Vec<Use> {
    let toks = tokens(code);
    let mut out = Vec::new();
    // The inline modules open at this point, with the brace depth inside
    // each.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].text.as_str();
        match t {
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            "mod"
                if toks.get(i + 2).map(|t| t.text.as_str()) == Some("{")
                    && toks.get(i + 1).is_some() =>
            {
                inline.push((toks[i + 1].text.clone(), depth + 1));
            }
            _ => {}
        }
        let after_sep = i > 0 && toks[i - 1].text == "::";
        if path_start(t) && !after_sep && toks.get(i + 1).map(|t| t.text.as_str()) == Some("::") {
            let line = toks[i].line;
            let mut base = module.to_vec();
            base.extend(inline.iter().map(|(m, _)| m.clone()));
            let mut paths = Vec::new();
            let mut j = i + 1;
            read_tree(&toks, &mut j, vec![t.to_string()], &mut paths);
            for written in paths {
                // `self::` alone in a group (`use a::{self}`) and paths that
                // stop at a keyword name modules already counted.
                let Some(target) = resolve(&base, &written) else {
                    continue;
                };
                out.push(Use {
                    line,
                    written: written.join("::"),
                    target,
                });
            }
            // Braces inside the path were consumed: count them.
            for tok in &toks[i + 1..j] {
                match tok.text.as_str() {
                    "{" => depth += 1,
                    "}" => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// A source file of the crate.
struct Source {
    /// Relative to `src`, for messages.
    rel: PathBuf,
    /// Its module's path from the crate root (`lib.rs` is the root, `[]`;
    /// `net/mod.rs` is `["net"]`).
    module: Vec<String>,
    /// The stripped code.
    code: String,
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

fn module_path(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if segs
        .last()
        .is_some_and(|s| s == "mod" || s == "lib" || s == "main")
    {
        segs.pop();
    }
    segs
}

fn sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources = sources_in(&src, &[]);
    assert!(
        sources.len() > 20,
        "sources not found under {}",
        src.display()
    );
    sources
}

/// The sources of the crate whose root (`lib.rs` or `main.rs`) is in
/// `root`, but for the subfolders `skip` (other crates, such as a
/// package's binaries).
fn sources_in(root: &Path, skip: &[&str]) -> Vec<Source> {
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(root).unwrap().to_path_buf();
            let first = rel
                .components()
                .next()?
                .as_os_str()
                .to_string_lossy()
                .to_string();
            if skip.contains(&first.as_str()) {
                return None;
            }
            Some(Source {
                module: module_path(&rel),
                code: strip(&fs::read_to_string(&file).unwrap()),
                rel,
            })
        })
        .collect()
}

/// The crates of the repository beside this one, each as its root folder
/// and the subfolders that are not part of it: the published crates, the
/// recipes, the benchmarks' library and their report.
fn other_crates() -> Vec<(PathBuf, &'static [&'static str])> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut roots: Vec<(PathBuf, &'static [&'static str])> = Vec::new();
    let mut crates: Vec<PathBuf> = fs::read_dir(repo.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    roots.extend(crates.into_iter().map(|p| (p, &[][..])));
    roots.push((repo.join("recipes/src"), &["bin"]));
    roots.push((repo.join("bench/src"), &["bin"]));
    roots.push((repo.join("bench/src/bin/report"), &[]));
    roots
}

/// The paths each `use` of `code` names (groups expanded, as written),
/// each with the name it takes: its last segment, or for the last path of
/// a `use` the alias after `as`.
fn use_paths(code: &str) -> Vec<(Vec<String>, String)> {
    let toks = tokens(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i].text != "use" {
            i += 1;
            continue;
        }
        let mut j = i + 2;
        let mut paths = Vec::new();
        let first = toks.get(i + 1).map(|t| t.text.clone()).unwrap_or_default();
        read_tree(&toks, &mut j, vec![first], &mut paths);
        // The alias of the last path, if any, stands for its name.
        let alias = (toks.get(j).map(|t| t.text.as_str()) == Some("as"))
            .then(|| toks.get(j + 1).map(|t| t.text.clone()))
            .flatten();
        let n = paths.len();
        for (k, p) in paths.into_iter().enumerate() {
            let name = match &alias {
                Some(a) if k == n - 1 => a.clone(),
                _ => p.last().cloned().unwrap_or_default(),
            };
            out.push((p, name));
        }
        i = j;
    }
    out
}

/// The modules the crate root re-exports whole, each under a name of the
/// root (`pub use task::{raw, task_local};`, `pub use a::b as c;`): that
/// name and the module's path. A path through such a name names the
/// module itself, not an item of the root.
fn root_module_names(sources: &[Source]) -> BTreeMap<String, Vec<String>> {
    let modules: BTreeSet<&[String]> = sources.iter().map(|s| s.module.as_slice()).collect();
    let mut out = BTreeMap::new();
    for root in sources.iter().filter(|s| s.module.is_empty()) {
        for (p, name) in use_paths(&root.code) {
            let p: Vec<String> = p
                .into_iter()
                .skip_while(|x| x == "crate" || x == "self")
                .collect();
            if p.len() >= 2 && modules.contains(p.as_slice()) {
                out.insert(name, p);
            }
        }
    }
    out
}

/// `target` with a module named through the root (see
/// [`root_module_names`]) spelled out: `task_local::LocalKey` becomes
/// `task::task_local::LocalKey`.
fn through_root_names(target: &[String], names: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    match target.first().and_then(|f| names.get(f)) {
        Some(module) => module.iter().chain(&target[1..]).cloned().collect(),
        None => target.to_vec(),
    }
}

// ---------------------------------------------------------------------------
// The checks.

/// The paths in `sources` that point to a top-level module of the same
/// rank or above, or go through the crate root's re-exports.
fn upward_uses(sources: &[Source], ranks: &BTreeMap<&str, usize>) -> Vec<String> {
    let names = root_module_names(sources);
    let mut wrong = Vec::new();
    for s in sources {
        let own_name = s.module.first().map_or("lib", String::as_str);
        let Some(&own) = ranks.get(own_name) else {
            wrong.push(format!(
                "{}: module `{own_name}` has no rank",
                s.rel.display()
            ));
            continue;
        };
        if s.module.is_empty() {
            // The root may use everything.
            continue;
        }
        for u in uses(&s.module, &s.code) {
            let target = through_root_names(&u.target, &names);
            let Some(top) = target.first() else {
                wrong.push(format!(
                    "{}:{}: `{}` names the crate root",
                    s.rel.display(),
                    u.line,
                    u.written
                ));
                continue;
            };
            if top == own_name {
                continue;
            }
            match ranks.get(top.as_str()) {
                Some(&r) if r < own => {}
                Some(&r) => wrong.push(format!(
                    "{}:{}: `{own_name}` (rank {own}) uses `{top}` (rank {r}) through `{}`",
                    s.rel.display(),
                    u.line,
                    u.written
                )),
                None => wrong.push(format!(
                    "{}:{}: `{}` goes through the crate root (`{top}` is no module)",
                    s.rel.display(),
                    u.line,
                    u.written
                )),
            }
        }
    }
    wrong
}

/// For each folder (a module path), its files' imports of each other:
/// `from -> to -> where` (a `file:line` and the path as written).
type FolderGraphs = BTreeMap<Vec<String>, BTreeMap<String, BTreeMap<String, String>>>;

/// The names each folder's `mod.rs` re-exports from its children
/// (`pub use child::{A, B}`, `pub use child::D as E`): name -> child.
fn reexports(
    sources: &[Source],
    children: &BTreeMap<Vec<String>, BTreeSet<String>>,
) -> BTreeMap<Vec<String>, BTreeMap<String, String>> {
    let mut out: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    for s in sources.iter().filter(|s| s.rel.ends_with("mod.rs")) {
        for (p, name) in use_paths(&s.code) {
            let p: Vec<String> = p.into_iter().skip_while(|x| x == "self").collect();
            let from_child = children
                .get(&s.module)
                .is_some_and(|k| p.first().is_some_and(|f| k.contains(f)));
            if from_child && p.len() >= 2 && p.last().is_some_and(|l| l != "*") {
                out.entry(s.module.clone())
                    .or_default()
                    .insert(name, p[0].clone());
            }
        }
    }
    out
}

/// The imports between files of one folder, from every path that leaves
/// its file for a sibling (directly or through the folder's re-exports).
fn folder_graphs(sources: &[Source], root_too: bool) -> FolderGraphs {
    // The children of each folder: its files and subfolders.
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for s in sources {
        if let Some((last, folder)) = s.module.split_last() {
            children
                .entry(folder.to_vec())
                .or_default()
                .insert(last.clone());
        }
    }
    let reexported = reexports(sources, &children);
    let names = root_module_names(sources);
    let mut graphs = FolderGraphs::new();
    for s in sources {
        for u in uses(&s.module, &s.code) {
            let target = through_root_names(&u.target, &names);
            let common = s
                .module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            // Between top-level modules the ranks rule, unless `root_too`
            // (a crate without ranks). A path into the file's own module
            // (or, from a folder's `mod.rs`, into the folder) is no edge; a
            // subfolder's `mod.rs` speaks for the subfolder, one node of
            // the folder above.
            if (common == 0 && !root_too) || common >= s.module.len() || common >= target.len() {
                continue;
            }
            let folder = s.module[..common].to_vec();
            let from = s.module[common].clone();
            let named = &target[common];
            let kids = children.get(&folder);
            let to = if kids.is_some_and(|k| k.contains(named)) {
                named.clone()
            } else if let Some(child) = reexported.get(&folder).and_then(|r| r.get(named)) {
                child.clone()
            } else {
                // An item of the folder's own `mod.rs`.
                continue;
            };
            if to == from {
                continue;
            }
            graphs
                .entry(folder)
                .or_default()
                .entry(from)
                .or_default()
                .entry(to)
                .or_insert_with(|| format!("{}:{} `{}`", s.rel.display(), u.line, u.written));
        }
    }
    graphs
}

/// Every cycle of the graph, each once (from its smallest node), as the
/// nodes in order with the first repeated at the end.
fn cycles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    fn dfs(
        graph: &BTreeMap<String, BTreeMap<String, String>>,
        start: &str,
        path: &mut Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) {
        let here = path.last().unwrap().clone();
        for next in graph.get(&here).into_iter().flat_map(|m| m.keys()) {
            if next == start {
                let mut c = path.clone();
                c.push(start.to_string());
                out.push(c);
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                dfs(graph, start, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    for start in graph.keys() {
        dfs(graph, start, &mut vec![start.clone()], &mut out);
    }
    out
}

/// The `# Layout` list of the crate docs: per layer, its name and the
/// modules of each rank (the names in back-quotes before the first `: `
/// of each `- ` item).
fn documented_layout(lib_rs: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let mut layers: Vec<(String, Vec<Vec<String>>)> = Vec::new();
    let mut inside = false;
    for line in lib_rs.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.strip_prefix(' ').unwrap_or(doc);
        if doc.starts_with('#') {
            inside = doc == "# Layout";
            continue;
        }
        if !inside {
            continue;
        }
        let trimmed = doc.trim_start();
        let numbered = trimmed
            .split_once(". ")
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if let Some((_, name)) = numbered.filter(|_| !doc.starts_with(' ')) {
            layers.push((name.trim_end_matches('.').to_string(), Vec::new()));
        } else if let Some(item) = trimmed.strip_prefix("- ") {
            let head = match item.find(": ") {
                Some(i) => &item[..i],
                None => item.trim_end_matches(':'),
            };
            let names: Vec<String> = head
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            if let Some((_, ranks)) = layers.last_mut() {
                ranks.push(names);
            }
        }
    }
    layers
}

// ---------------------------------------------------------------------------
// The tests.

/// No module uses one of its own rank or above, nor an item through the
/// crate root's re-exports, whichever way the path is written.
#[test]
fn no_module_uses_a_module_above_it() {
    let wrong = upward_uses(&sources(), &ranks());
    assert!(
        wrong.is_empty(),
        "imports against the layers (see LAYERS in tests/layering.rs):\n{}",
        wrong.join("\n")
    );
}

/// Each cycle of `graphs`, as the folder under `root` it is in, its files
/// in order, and the import behind each step.
fn described_cycles(root: &Path, graphs: &FolderGraphs) -> Vec<String> {
    let mut found = Vec::new();
    for (folder, graph) in graphs {
        for cycle in cycles(graph) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("  {} -> {}: {}", w[0], w[1], graph[&w[0]][&w[1]]))
                .collect();
            let place = folder.iter().fold(root.to_path_buf(), |p, f| p.join(f));
            found.push(format!(
                "{}: {}\n{}",
                place.display(),
                cycle.join(" -> "),
                steps.join("\n")
            ));
        }
    }
    found
}

/// The files of each folder import each other without a cycle.
#[test]
fn no_import_cycle_inside_a_folder() {
    let found = described_cycles(Path::new("src"), &folder_graphs(&sources(), false));
    assert!(
        found.is_empty(),
        "import cycles between the files of a folder (move what both need \
         into one of them, or into a third file both use):\n{}",
        found.join("\n")
    );
}

/// The other crates of the repository (the published ones, the recipes,
/// the benchmarks and their report) have no import cycle between their
/// files either, at their roots included: they have no ranks of their
/// own, so this is what keeps each a stack of layers.
#[test]
fn no_import_cycle_in_the_other_crates() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut read = 0;
    for (root, skip) in other_crates() {
        let sources = sources_in(&root, skip);
        read += sources.len();
        let at = root.strip_prefix(repo).unwrap_or(&root);
        found.extend(described_cycles(at, &folder_graphs(&sources, true)));
    }
    assert!(read > 40, "only {read} files read in the other crates");
    assert!(
        found.is_empty(),
        "import cycles between the files of a crate or folder (move what both \
         need into a third file both use):\n{}",
        found.join("\n")
    );
}

/// The crate docs' `# Layout` names the same modules, in the same layers
/// and ranks, as `LAYERS`.
#[test]
fn the_crate_docs_list_the_layers_as_enforced() {
    let lib_rs =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let documented = documented_layout(&lib_rs);
    let enforced: Vec<(String, Vec<Vec<String>>)> = LAYERS
        .iter()
        .map(|l| {
            let ranks = l
                .ranks
                .iter()
                .map(|g| g.iter().map(|m| m.to_string()).collect())
                .collect();
            (l.name.to_string(), ranks)
        })
        .collect();
    assert_eq!(
        documented, enforced,
        "the `# Layout` list of src/lib.rs (left) and LAYERS in tests/layering.rs (right) \
         differ: one numbered item per layer, one `- ` item per rank naming its modules \
         in back-quotes before the first `: `"
    );
    // Every module the crate has is ranked.
    let ranked = ranks();
    for s in sources() {
        let top = s.module.first().map_or("lib", String::as_str);
        assert!(
            ranked.contains_key(top),
            "`{top}` ({}) has no rank",
            s.rel.display()
        );
    }
}

// ---------------------------------------------------------------------------
// The checker itself.

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A source file of the checker's own tests: its path under `src` and its
/// code.
fn file(rel: &str, code: &str) -> Source {
    Source {
        rel: PathBuf::from(rel),
        module: module_path(Path::new(rel)),
        code: strip(code),
    }
}

/// Comments and literals are blanked, lines kept.
#[test]
fn the_checker_skips_comments_and_literals() {
    let code = "let a = crate::timer::x(); // crate::spawn\n/// [`x`](crate::scheduler)\n\
                let s = \"crate::net\"; let c = '{'; let r = r#\"super::x\"#;\n\
                fn f<'a>(x: &'a str) /* crate::sync */ {}";
    let stripped = strip(code);
    assert_eq!(stripped.lines().count(), code.lines().count());
    let found: Vec<String> = uses(&strings(&["time"]), &stripped)
        .into_iter()
        .map(|u| u.target.join("::"))
        .collect();
    assert_eq!(found, ["timer::x"]);
    assert!(stripped.contains("fn f<'a>(x: &'a str)"), "{stripped}");
}

/// `super::` and `self::` are resolved from the file's module and the
/// inline modules around them; groups are expanded.
#[test]
fn the_checker_resolves_relative_paths() {
    let targets = |module: &[&str], code: &str| -> Vec<String> {
        uses(&strings(module), &strip(code))
            .into_iter()
            .map(|u| u.target.join("::"))
            .collect()
    };
    // In a top-level file, `super::` is the crate root.
    assert_eq!(targets(&["timer"], "use super::spawn::x;"), ["spawn::x"]);
    // In a folder's file, a sibling; two levels up, a top-level module.
    assert_eq!(
        targets(
            &["net", "addr"],
            "use super::resolve::f; use super::super::blocking;"
        ),
        ["net::resolve::f", "blocking"]
    );
    // In a mod.rs (module `net`), `super::` is the root, `self::` the folder.
    assert_eq!(
        targets(&["net"], "use self::addr::A; use super::sync;"),
        ["net::addr::A", "sync"]
    );
    // Inside an inline module, `super::` is the file's module.
    assert_eq!(
        targets(
            &["timer"],
            "mod tests { use super::Heap; mod m { use super::super::x; } }\nuse super::y;"
        ),
        ["timer::Heap", "timer::x", "y"]
    );
    // Groups, nested groups, `self` in a group, globs.
    assert_eq!(
        targets(
            &["net", "udp"],
            "use super::{addr::{self, each_addr}, resolve};"
        ),
        ["net::addr", "net::addr::each_addr", "net::resolve"]
    );
    assert_eq!(
        targets(&["sync"], "use crate::protocol::*;"),
        ["protocol::*"]
    );
    // `$crate::` in a macro, and a path in an expression.
    assert_eq!(
        targets(
            &["net"],
            "fn f() -> $crate::protocol::IoId { crate::time::sleep(d) }"
        ),
        ["protocol::IoId", "time::sleep"]
    );
}

/// Upward paths are found however they are written, and named in the
/// message.
#[test]
fn the_checker_reports_upward_paths() {
    let ranks = ranks();
    let wrong = upward_uses(
        &[
            file("time.rs", "use super::sync::X;"),
            file("stack/pool.rs", "use super::super::scheduler::Scheduler;"),
            file(
                "reactor/mod.rs",
                "use self::accept::A; use super::protocol::Op;",
            ),
            file("sys/mod.rs", "use crate::spawn_blocking;"),
        ],
        &ranks,
    );
    assert_eq!(wrong.len(), 3, "{wrong:#?}");
    assert!(
        wrong[0].starts_with("time.rs:1: `time` (rank "),
        "{}",
        wrong[0]
    );
    assert!(wrong[0].contains(") uses `sync`"), "{}", wrong[0]);
    assert!(
        wrong[1].contains("`stack` (rank 2) uses `scheduler`"),
        "{}",
        wrong[1]
    );
    assert!(wrong[2].contains("goes through the crate root"));
}

/// A module the root re-exports whole (`pub use task::task_local;`) is
/// that module wherever a path names it through the root: its own files
/// may say `$crate::task_local` (as a macro must), a sibling that does so
/// imports it, and a module below it that does so is caught.
#[test]
fn the_checker_follows_modules_the_root_re_exports() {
    let sources = [
        file(
            "lib.rs",
            "mod sys; mod task; pub use task::{raw, task_local}; pub use task::spawn::spawn;",
        ),
        file(
            "task/mod.rs",
            "pub mod raw; pub mod spawn; pub mod task_local;",
        ),
        file(
            "task/task_local.rs",
            "macro_rules! key { () => { $crate::task_local::LocalKey::new() } }",
        ),
        file("task/raw.rs", "pub use super::spawn::spawn;"),
        file("task/spawn.rs", "use crate::task_local::Inherited;"),
        file("sys/mod.rs", "use crate::raw::Op;"),
    ];
    let wrong = upward_uses(&sources, &ranks());
    assert_eq!(wrong.len(), 1, "{wrong:#?}");
    assert!(
        wrong[0].starts_with("sys/mod.rs:1: `sys` (rank 0) uses `task`"),
        "{}",
        wrong[0]
    );
    let graphs = folder_graphs(&sources, false);
    assert!(graphs[&strings(&["task"])]["spawn"].contains_key("task_local"));
}

/// Cycles between a folder's files are found, also through the folder's
/// re-exports, and straight lines are not cycles.
#[test]
fn the_checker_finds_folder_cycles() {
    let graphs = folder_graphs(
        &[
            file("net/mod.rs", "mod a; mod b; mod c; pub use c::Thing;"),
            file("net/a.rs", "use super::b::f;"),
            file("net/b.rs", "use super::Thing;"),
            file("net/c.rs", "fn g() { crate::net::a::h() }"),
            file("sync/mod.rs", "mod x; mod y;"),
            file("sync/x.rs", "use super::y::f;"),
            file("sync/y.rs", "use crate::protocol::Op;"),
        ],
        false,
    );
    let net = &graphs[&strings(&["net"])];
    assert_eq!(cycles(net), [strings(&["a", "b", "c", "a"])]);
    assert!(net["b"]["c"].starts_with("net/b.rs:1"));
    assert!(cycles(&graphs[&strings(&["sync"])]).is_empty());
    // At a crate's root, only when asked (the core crate's ranks see to
    // its own).
    let root = [
        file("lib.rs", "mod conn; mod server;"),
        file("conn.rs", "use crate::server::ServeConfig;"),
        file("server.rs", "use super::conn::run;"),
        file("main.rs", "mod report; use crate::report::x;"),
    ];
    assert!(!folder_graphs(&root, false).contains_key(&Vec::new()));
    let top = &folder_graphs(&root, true)[&Vec::new()];
    assert_eq!(cycles(top), [strings(&["conn", "server", "conn"])]);
}

/// The `# Layout` reader takes layer names and each rank's modules.
#[test]
fn the_checker_reads_the_layout_list() {
    let doc = "//! # Layout\n//!\n//! Intro `not_a_module`.\n//!\n\
               //! 1. Plain data.\n//!    - `protocol`, [`failure`](x): why, `ignored`\n\
               //!      and `more`.\n//! 2. More.\n//!    - this root (`lib`): the rest\n\
               //!\n//! # Platforms\n//! 3. Not layout.\n";
    assert_eq!(
        documented_layout(doc),
        [
            (
                "Plain data".to_string(),
                vec![strings(&["protocol", "failure"])]
            ),
            ("More".to_string(), vec![strings(&["lib"])]),
        ]
    );
}
