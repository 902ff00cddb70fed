//! Line diffs of file edits, for approval prompts and the transcript.
//!
//! A unified diff without headers: removed lines red with `-`, added lines green with `+`,
//! [`CONTEXT`] lines of dim context around each change, a dim `⋮` between hunks. Text is
//! cleaned ([`sanitize::clean`]), each diff line wraps with its sign hanging, and the output is
//! capped at `max_lines` rows, the last of which then says `… N more lines`.

use std::time::Duration;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use similar::{Algorithm, ChangeTag, DiffTag, TextDiff};

use crate::sanitize;
use crate::wrap;

/// Lines of context around a change.
pub const CONTEXT: usize = 3;
/// Past this the diff algorithm settles for a less minimal diff: an approval prompt must not
/// hang on a pathological pair of files.
const TIMEOUT: Duration = Duration::from_millis(250);

const REMOVED: Style = Style::new().fg(Color::Red);
const ADDED: Style = Style::new().fg(Color::Green);
const CONTEXT_STYLE: Style = Style::new().add_modifier(Modifier::DIM);
const MUTED: Style = Style::new().fg(Color::DarkGray);

enum Row<'a> {
    Change(ChangeTag, &'a str),
    Separator,
}

fn text_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, str> {
    TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(TIMEOUT)
        .diff_lines(old, new)
}

/// The diff of `old` → `new` as lines of at most `width` columns, at most `max_lines` of them.
/// Empty when nothing changed. When cut, the last line is `… N more lines`, N counting the
/// diff lines not shown in full.
pub fn edit_diff(old: &str, new: &str, width: u16, max_lines: usize) -> Vec<Line<'static>> {
    let diff = text_diff(old, new);
    let mut rows = Vec::new();
    for (n, group) in diff.grouped_ops(CONTEXT).iter().enumerate() {
        if n > 0 {
            rows.push(Row::Separator);
        }
        for op in group {
            for change in diff.iter_changes(op) {
                rows.push(Row::Change(change.tag(), change.value()));
            }
        }
    }
    render(&rows, width, max_lines)
}

/// A new file: every line as added.
pub fn new_file(content: &str, width: u16, max_lines: usize) -> Vec<Line<'static>> {
    let rows: Vec<Row<'_>> = content
        .split_inclusive('\n')
        .map(|l| Row::Change(ChangeTag::Insert, l))
        .collect();
    render(&rows, width, max_lines)
}

/// Lines added and removed by `old` → `new` (a changed line counts once each way).
pub fn stat(old: &str, new: &str) -> (usize, usize) {
    let (mut added, mut removed) = (0, 0);
    for op in text_diff(old, new).ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => {}
            DiffTag::Delete => removed += old_range.len(),
            DiffTag::Insert => added += new_range.len(),
            DiffTag::Replace => {
                removed += old_range.len();
                added += new_range.len();
            }
        }
    }
    (added, removed)
}

fn render(rows: &[Row<'_>], width: u16, max_lines: usize) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let lines = render_row(row, width);
        let more_after = i + 1 < rows.len();
        if out.len() + lines.len() + usize::from(more_after) <= max_lines {
            out.extend(lines);
            continue;
        }
        // Out of room: what fits of this row, then the count of what is left.
        let room = max_lines.saturating_sub(out.len() + 1);
        if matches!(row, Row::Change(..)) {
            out.extend(lines.into_iter().take(room));
        }
        let left = rows[i..].iter().filter(|r| matches!(r, Row::Change(..))).count();
        if out.len() < max_lines {
            let noun = if left == 1 { "line" } else { "lines" };
            let more = format!("… {left} more {noun}");
            let more = match width {
                0 => more,
                w => sanitize::truncate(&more, usize::from(w)),
            };
            out.push(Line::from(Span::styled(more, MUTED)));
        }
        break;
    }
    out
}

fn render_row(row: &Row<'_>, width: u16) -> Vec<Line<'static>> {
    let (tag, text) = match row {
        Row::Separator => return vec![Line::from(Span::styled("⋮", MUTED))],
        Row::Change(tag, text) => (*tag, text),
    };
    let (sign, style) = match tag {
        ChangeTag::Delete => ("-", REMOVED),
        ChangeTag::Insert => ("+", ADDED),
        ChangeTag::Equal => (" ", CONTEXT_STYLE),
    };
    let text = text.strip_suffix('\n').unwrap_or(text);
    let text = sanitize::clean(text);
    let line = Line::from(Span::styled(text.into_owned(), style));
    wrap::wrap_prefixed(&line, width, &[Span::styled(sign, style)], &[Span::styled(" ", style)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::tests::{text, Rng};

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(text).collect()
    }

    fn numbered(range: std::ops::Range<usize>) -> String {
        range.map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn a_changed_line_with_context() {
        let old = "a\nb\nc\nd\ne\n";
        let new = "a\nb\nC\nd\ne\n";
        let out = edit_diff(old, new, 80, 100);
        assert_eq!(texts(&out), [" a", " b", "-c", "+C", " d", " e"]);
        assert_eq!(out[2].spans[0].style.fg, Some(Color::Red));
        assert_eq!(out[3].spans[0].style.fg, Some(Color::Green));
        assert!(out[0].spans[0].style.add_modifier.contains(Modifier::DIM));
        assert_eq!(stat(old, new), (1, 1));
    }

    #[test]
    fn hunks_are_separated() {
        let old = numbered(0..20);
        let new = old.replace("line 1\n", "line one\n").replace("line 18\n", "");
        let out = edit_diff(&old, &new, 80, 100);
        assert_eq!(
            texts(&out),
            [
                " line 0",
                "-line 1",
                "+line one",
                " line 2",
                " line 3",
                " line 4",
                "⋮",
                " line 15",
                " line 16",
                " line 17",
                "-line 18",
                " line 19",
            ]
        );
        assert_eq!(stat(&old, &new), (1, 2));
    }

    #[test]
    fn no_change_is_empty() {
        assert!(edit_diff("same\n", "same\n", 80, 10).is_empty());
        assert_eq!(stat("same\n", "same\n"), (0, 0));
        assert!(new_file("", 80, 10).is_empty());
    }

    #[test]
    fn capped_with_a_count() {
        let new = numbered(0..10);
        let out = new_file(&new, 80, 4);
        assert_eq!(texts(&out), ["+line 0", "+line 1", "+line 2", "… 7 more lines"]);
        // Exactly enough room: no count line.
        assert_eq!(new_file(&new, 80, 10).len(), 10);
        assert_eq!(texts(&new_file(&new, 80, 9))[8], "… 2 more lines");
        assert_eq!(texts(&new_file("a\nb\n", 80, 1)), ["… 2 more lines"]);
        assert!(new_file(&new, 80, 0).is_empty());
        assert_eq!(stat("", &new), (10, 0));
    }

    #[test]
    fn long_lines_wrap_with_the_sign_hanging() {
        let out = new_file("alpha beta gamma\n", 12, 10);
        assert_eq!(texts(&out), ["+alpha beta", " gamma"]);
        assert!(out.iter().all(|l| l.spans.iter().all(|s| s.style == ADDED)));
        // A cut inside a wrapped line counts that line.
        let out = new_file("alpha beta gamma delta epsilon zeta\nz\n", 16, 3);
        assert_eq!(texts(&out), ["+alpha beta", " gamma delta", "… 2 more lines"]);
        // So narrow the count itself is cut.
        assert_eq!(texts(&new_file("a b c d e f\nz\n", 4, 3))[2], "… 2…");
    }

    #[test]
    fn hostile_content_is_cleaned() {
        let out = edit_diff("x\n", "\x1b]0;pwned\x07y\x1b[2J\u{202e}\r\n", 80, 10);
        assert_eq!(texts(&out), ["-x", "+y\u{FFFD}"]);
        for l in &out {
            assert!(sanitize::is_clean(&text(l)));
        }
    }

    #[test]
    fn no_newline_at_end_and_crlf() {
        let out = edit_diff("a\nb", "a\nc", 80, 10);
        assert_eq!(texts(&out), [" a", "-b", "+c"]);
        let out = new_file("a\r\nb", 80, 10);
        assert_eq!(texts(&out), ["+a", "+b"]);
    }

    #[test]
    fn random_edits_never_panic_and_fit() {
        let mut rng = Rng(99);
        let words = ["a", "b", "", "  x", "世界", "\t", "\x1b[1m", "long line of text here"];
        let doc = |rng: &mut Rng| -> String {
            (0..rng.below(30))
                .map(|_| format!("{}\n", words[rng.below(words.len())]))
                .collect()
        };
        for _ in 0..1_000 {
            let (old, new) = (doc(&mut rng), doc(&mut rng));
            let width = rng.below(20) as u16;
            let max = rng.below(15);
            let out = edit_diff(&old, &new, width, max);
            assert!(out.len() <= max);
            for l in &out {
                assert!(sanitize::is_clean(&text(l)));
                if width >= 2 {
                    assert!(l.width() <= usize::from(width), "{l:?} at {width}");
                }
            }
            let (added, removed) = stat(&old, &new);
            assert!(added <= new.lines().count() && removed <= old.lines().count());
        }
    }
}
