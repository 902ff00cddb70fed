//! `docs/requirements.md` stays current: every rule id cited in the repository has a row there,
//! each group of rules is numbered without gaps, every row says how the rule is covered, and
//! every test a row names exists. `REQUIREMENTS.md` itself lives outside the repository, so the
//! ids cited here are what the page is checked against.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

/// The groups of `REQUIREMENTS.md`, in its order, and how many rules each has.
const GROUPS: &[(char, u32)] = &[
    ('E', 9),
    ('S', 6),
    ('P', 12),
    ('M', 12),
    ('T', 3),
    ('A', 6),
    ('D', 19),
    ('H', 6),
];

/// The folders (under the repository root) whose files may cite rule ids; `sdk-*` folders too.
const SCANNED: &[&str] = &["host", "tests", "wit", "example-plugins", "scripts", "docs"];

/// Files at the root that may cite rule ids.
const SCANNED_ROOT_FILES: &[&str] = &["README.md"];

/// Folders never read: build output, installed packages, caches.
const SKIPPED_DIRS: &[&str] = &[
    "target",
    "node_modules",
    "__pycache__",
    ".git",
    "build",
    "dist",
    ".venv",
];

/// The kinds of file read.
const EXTENSIONS: &[&str] = &["rs", "py", "wit", "md", "toml", "sh"];

/// Files not scanned for citations: the page itself, and this test, whose self-checks write
/// made-up ids.
const NOT_SCANNED: &[&str] = &["docs/requirements.md", "host/tests/requirements_doc.rs"];

/// Words that look like rule ids but are not, as (file, word). When a hex pair or a product name
/// trips the check, add it here with the reason.
const NOT_RULE_IDS: &[(&str, &str)] = &[];

const DOC: &str = "docs/requirements.md";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository root")
        .to_path_buf()
}

/// A rule id as a word: a group letter and a number.
fn rule_id() -> Regex {
    Regex::new(r"\b([ESPMTADH])([0-9]{1,2})\b").expect("valid regex")
}

/// `X1–X7` (en dash or hyphen): the ids between the ends are cited too.
fn rule_range() -> Regex {
    Regex::new(r"\b([ESPMTADH])([0-9]{1,2})\s*[–-]\s*([ESPMTADH])([0-9]{1,2})\b").expect("valid regex")
}

/// The ids a text cites, ranges expanded, each with its 1-based line.
fn cited_ids(text: &str) -> Vec<(usize, String)> {
    let (id, range) = (rule_id(), rule_range());
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for c in id.captures_iter(line) {
            out.push((n + 1, c[0].to_string()));
        }
        for c in range.captures_iter(line) {
            if c[1] != c[3] {
                continue;
            }
            let (from, to): (u32, u32) = (c[2].parse().expect("digits"), c[4].parse().expect("digits"));
            for k in from.saturating_add(1)..to {
                out.push((n + 1, format!("{}{k}", &c[1])));
            }
        }
    }
    out
}

/// One row of the page: the rule id, its line, and the tests cell.
struct Row {
    id: String,
    line: usize,
    tests: String,
}

/// The rows of the page's tables whose first cell is a rule id; malformed ones as problems.
fn rows(doc: &str, problems: &mut Vec<String>) -> Vec<Row> {
    let id = Regex::new(r"^([ESPMTADH])([0-9]{1,2})$").expect("valid regex");
    let mut out = Vec::new();
    for (n, line) in doc.lines().enumerate() {
        let Some(inner) = line.trim().strip_prefix('|').and_then(|l| l.strip_suffix('|')) else {
            continue;
        };
        let cells: Vec<&str> = inner.split('|').map(str::trim).collect();
        if !id.is_match(cells[0]) {
            continue;
        }
        if cells.len() != 3 {
            problems.push(format!(
                "{DOC}:{}: a rule row has three cells (id, rule, tests), not {}",
                n + 1,
                cells.len()
            ));
            continue;
        }
        if cells[1].is_empty() {
            problems.push(format!("{DOC}:{}: {} has no text", n + 1, cells[0]));
        }
        out.push(Row {
            id: cells[0].to_string(),
            line: n + 1,
            tests: cells[2].to_string(),
        });
    }
    out
}

/// Each group has the rules 1..=its size, once each, in the order of `REQUIREMENTS.md`.
fn check_numbering(rows: &[Row], problems: &mut Vec<String>) {
    let mut seen: BTreeMap<char, Vec<u32>> = BTreeMap::new();
    let mut order = Vec::new();
    for r in rows {
        let letter = r.id.chars().next().expect("non-empty id");
        let n: u32 = r.id[1..].parse().expect("digits");
        seen.entry(letter).or_default().push(n);
        if order.last() != Some(&letter) {
            order.push(letter);
        }
    }
    let want_order: Vec<char> = GROUPS.iter().map(|g| g.0).collect();
    if order != want_order {
        problems.push(format!("{DOC}: groups are in the order {order:?}, not {want_order:?}"));
    }
    for &(letter, size) in GROUPS {
        let got = seen.remove(&letter).unwrap_or_default();
        let want: Vec<u32> = (1..=size).collect();
        if got != want {
            problems.push(format!(
                "{DOC}: group {letter} lists {got:?}; REQUIREMENTS.md has {letter}1–{letter}{size}, once each, in order"
            ));
        }
    }
}

/// `path::name` references to tests.
fn test_ref() -> Regex {
    Regex::new(r"`([A-Za-z0-9_./-]+\.(?:rs|py))::([A-Za-z_][A-Za-z0-9_]*)`").expect("valid regex")
}

/// Whether `src` (a file of type `ext`) defines a test function `name`: a Rust `fn` under
/// `#[test]` / `#[tokio::test…]` (other attributes and comments may come between), or a Python
/// `def test_…`.
fn defines_test(src: &str, ext: &str, name: &str) -> bool {
    if ext == "py" {
        let def = Regex::new(&format!(r"^\s*def\s+{}\s*\(", regex::escape(name))).expect("valid regex");
        return name.starts_with("test") && src.lines().any(|l| def.is_match(l));
    }
    let func =
        Regex::new(&format!(r"^\s*(pub\s+)?(async\s+)?fn\s+{}\s*[(<]", regex::escape(name))).expect("valid regex");
    let lines: Vec<&str> = src.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| func.is_match(l))
        .any(|(i, _)| {
            lines[..i]
                .iter()
                .rev()
                .map(|l| l.trim())
                .take_while(|l| l.starts_with("#[") || l.starts_with("//") || l.is_empty())
                .any(|l| l.starts_with("#[test]") || l.starts_with("#[tokio::test"))
        })
}

/// Every row names its tests, says "not yet — issue N", or says why it has none; every test
/// named exists.
fn check_tests(rows: &[Row], root: &Path, problems: &mut Vec<String>) -> usize {
    let re = test_ref();
    let not_yet = Regex::new(r"not yet — issues? [0-9]+").expect("valid regex");
    let mut cited = 0;
    for r in rows {
        let refs: Vec<(String, String)> = re
            .captures_iter(&r.tests)
            .map(|c| (c[1].to_string(), c[2].to_string()))
            .collect();
        let explained = ["untested", "by construction"].iter().any(|w| r.tests.contains(w));
        if refs.is_empty() && !not_yet.is_match(&r.tests) && !explained {
            problems.push(format!(
                "{DOC}:{}: {} names no test, no \"not yet — issue N\" and no \"untested\"",
                r.line, r.id
            ));
        }
        for (file, name) in refs {
            cited += 1;
            let path = root.join(&file);
            let Ok(src) = std::fs::read_to_string(&path) else {
                problems.push(format!(
                    "{DOC}:{}: {} cites `{file}::{name}`, but there is no file {file}",
                    r.line, r.id
                ));
                continue;
            };
            let ext = file.rsplit('.').next().unwrap_or_default();
            if !defines_test(&src, ext, &name) {
                problems.push(format!(
                    "{DOC}:{}: {} cites `{file}::{name}`, but {file} has no test function `{name}` (renamed? moved?)",
                    r.line, r.id
                ));
            }
        }
    }
    cited
}

/// The files that may cite rule ids, as (path relative to the root with `/`, absolute path).
fn scanned_files(root: &Path) -> Vec<(String, PathBuf)> {
    let mut stack: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("read the repository root")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            p.is_dir() && (SCANNED.contains(&name) || name.starts_with("sdk-"))
        })
        .collect();
    let mut out: Vec<(String, PathBuf)> = SCANNED_ROOT_FILES
        .iter()
        .map(|f| (f.to_string(), root.join(f)))
        .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read a folder").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_str()) && !name.ends_with(".egg-info") {
                    stack.push(path);
                }
                continue;
            }
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
            if !EXTENSIONS.contains(&ext) {
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .expect("under the root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            if !NOT_SCANNED.contains(&rel.as_str()) {
                out.push((rel, path));
            }
        }
    }
    out.sort();
    out
}

fn fail_on(problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "{DOC} is out of date ({} problems):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn read_doc(root: &Path) -> String {
    std::fs::read_to_string(root.join(DOC)).expect("docs/requirements.md")
}

#[test]
fn every_rule_id_cited_in_the_repository_has_a_row() {
    let root = root();
    let mut problems = Vec::new();
    let defined: BTreeSet<String> = rows(&read_doc(&root), &mut problems)
        .into_iter()
        .map(|r| r.id)
        .collect();
    let files = scanned_files(&root);
    assert!(
        files.iter().any(|(rel, _)| rel == "host/crates/registry/src/names.rs"),
        "the scan misses the sources"
    );
    let mut cited = BTreeSet::new();
    for (rel, path) in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for (line, id) in cited_ids(&text) {
            if NOT_RULE_IDS.contains(&(rel.as_str(), id.as_str())) {
                continue;
            }
            if !defined.contains(&id) {
                problems.push(format!("{rel}:{line}: cites {id}, which {DOC} does not define"));
            }
            cited.insert(id);
        }
    }
    // So the check cannot pass by finding nothing.
    assert!(cited.len() > 40, "only {} rule ids found: {cited:?}", cited.len());
    fail_on(problems);
}

#[test]
fn each_group_is_numbered_without_gaps() {
    let mut problems = Vec::new();
    let rows = rows(&read_doc(&root()), &mut problems);
    check_numbering(&rows, &mut problems);
    fail_on(problems);
}

#[test]
fn every_row_says_how_it_is_covered_and_every_cited_test_exists() {
    let root = root();
    let mut problems = Vec::new();
    let rows = rows(&read_doc(&root), &mut problems);
    let cited = check_tests(&rows, &root, &mut problems);
    assert!(cited > 100, "only {cited} test references found");
    fail_on(problems);
}

/// The checks above, on made-up input, so that none of them can pass by matching nothing.
#[test]
fn the_checks_catch_what_they_are_for() {
    // Citations: words and ranges, not hex or parts of longer words.
    let ids: Vec<String> = cited_ids("see E1–E3, P11 and M4-M5\nnot 0xE1, DE1, E1E, P2P or E100")
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    assert_eq!(ids, ["E1", "E3", "P11", "M4", "M5", "E2"]);
    assert_eq!(cited_ids("x\nT9 here")[0], (2, "T9".to_string()));

    // Tests: a test function is found; a helper, a renamed test and a Python helper are not.
    let src = "#[test]\nfn checks_it() {}\n\n/// Doc.\n#[tokio::test(flavor = \"multi_thread\")]\n#[cfg(unix)]\nasync fn async_one() {}\n\nfn helper() {}\n";
    assert!(defines_test(src, "rs", "checks_it") && defines_test(src, "rs", "async_one"));
    assert!(!defines_test(src, "rs", "helper") && !defines_test(src, "rs", "checks"));
    assert!(!defines_test(
        &src.replace("checks_it", "checks_that"),
        "rs",
        "checks_it"
    ));
    let py = "class T:\n    def test_a(self):\n        pass\n    def setup(self):\n        pass\n";
    assert!(defines_test(py, "py", "test_a") && !defines_test(py, "py", "setup"));

    // Rows: a gap, a duplicate, a missing coverage note and a stale test reference are reported.
    let doc = "| id | rule | tests |\n|---|---|---|\n\
               | E1 | one | `host/tests/requirements_doc.rs::the_checks_catch_what_they_are_for` |\n\
               | E3 | three | `host/tests/requirements_doc.rs::no_such_test` |\n\
               | E3 | again | not yet — issue 9 |\n\
               | S1 | s | |\n";
    let mut problems = Vec::new();
    let rows = rows(doc, &mut problems);
    assert_eq!(rows.len(), 4);
    check_numbering(&rows, &mut problems);
    check_tests(&rows, &root(), &mut problems);
    let text = problems.join("\n");
    assert!(text.contains("group E lists [1, 3, 3]"), "{text}");
    assert!(text.contains("S1 names no test"), "{text}");
    assert!(text.contains("no test function `no_such_test`"), "{text}");
    assert!(!text.contains("the_checks_catch_what_they_are_for"), "{text}");
}
