//! Word wrap of styled lines by display width.
//!
//! Widths are terminal columns (unicode-width): a wide CJK character counts 2, a combining mark
//! 0. Text is measured and broken in *clusters* — a character with the zero-width characters
//! after it, joined across a ZWJ — so a mark never starts a line on its own and an emoji
//! sequence is measured as a whole, the way the terminal draws it.
//!
//! Rules: lines break at whitespace, and the whitespace at a break is dropped; leading
//! whitespace of the input (indentation) is kept; a word longer than the width is broken
//! across lines; a `\n` inside a span is a hard break. Every output line holds at least one
//! cluster, so a character wider than the width (a CJK char at width 1) gets its own line
//! rather than a loop. Width 0 means "no room to decide": the line comes back unwrapped.

use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

const ZWJ: char = '\u{200d}';

/// Columns `s` takes on a terminal.
pub fn display_width(s: &str) -> usize {
    s.width()
}

/// Columns a run of spans takes.
pub fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| display_width(&s.content)).sum()
}

/// The clusters of `s` with their widths (see the module docs).
pub(crate) fn clusters(s: &str) -> impl Iterator<Item = (&str, usize)> + '_ {
    let mut rest = s;
    std::iter::from_fn(move || {
        let mut chars = rest.char_indices();
        let (_, first) = chars.next()?;
        let mut end = first.len_utf8();
        if first != '\n' {
            let mut joined = first == ZWJ;
            for (j, c) in chars {
                let zero = c.width().unwrap_or(0) == 0;
                if c == '\n' || !(zero || joined) {
                    break;
                }
                joined = c == ZWJ;
                end = j + c.len_utf8();
            }
        }
        let (cluster, tail) = rest.split_at(end);
        rest = tail;
        let width = if cluster == "\n" { 0 } else { cluster.width() };
        Some((cluster, width))
    })
}

/// Wraps one line to `width` columns, keeping each span's style and the line's own style and
/// alignment.
pub fn wrap_line(line: &Line<'_>, width: u16) -> Vec<Line<'static>> {
    wrap_prefixed(line, width, &[], &[])
}

/// Wraps every line (see [`wrap_line`]).
pub fn wrap_lines(lines: &[Line<'_>], width: u16) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap_line(l, width)).collect()
}

/// Wraps `line` into the columns left after a prefix: `first_prefix` starts the first output
/// line, `rest_prefix` the others (a list item's bullet, then its hanging indent; a quote's
/// `│ `). A prefix that would leave the text too little room (less than half the width, capped
/// at 20 columns, and at least 2) is dropped — deep nesting in a narrow terminal flattens
/// rather than squeezing the text into a column of single characters.
pub fn wrap_prefixed(
    line: &Line<'_>,
    width: u16,
    first_prefix: &[Span<'static>],
    rest_prefix: &[Span<'static>],
) -> Vec<Line<'static>> {
    let (fw, rw) = (spans_width(first_prefix), spans_width(rest_prefix));
    let keep_prefix = prefix_fits(fw.max(rw), width);
    let width = usize::from(width);
    let (first_prefix, rest_prefix, fw, rw) = if keep_prefix {
        (first_prefix, rest_prefix, fw, rw)
    } else {
        (&[][..], &[][..], 0, 0)
    };
    let room = |prefix_w: usize| {
        if width == 0 {
            usize::MAX
        } else {
            width.saturating_sub(prefix_w)
        }
    };

    let items = flatten(line);
    let rows = layout(&items, room(fw), room(rw));

    rows.into_iter()
        .enumerate()
        .map(|(n, row)| {
            let prefix = if n == 0 { first_prefix } else { rest_prefix };
            let mut spans: Vec<Span<'static>> = prefix.to_vec();
            push_items(&mut spans, line, &items, &row);
            Line {
                style: line.style,
                alignment: line.alignment,
                spans,
            }
        })
        .collect()
}

/// Whether [`wrap_prefixed`] keeps a prefix this wide at this width (see there).
pub fn prefix_fits(prefix_width: usize, width: u16) -> bool {
    let width = usize::from(width);
    width == 0 || prefix_width + (width / 2).clamp(2, 20) <= width
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    Space,
    Newline,
}

/// One cluster of the line: which span, which bytes of it, how wide, what kind.
struct Item {
    span: usize,
    start: usize,
    end: usize,
    width: usize,
    kind: Kind,
}

fn flatten(line: &Line<'_>) -> Vec<Item> {
    let mut items = Vec::new();
    for (si, span) in line.spans.iter().enumerate() {
        let mut at = 0;
        for (cluster, width) in clusters(&span.content) {
            let kind = match cluster.chars().next() {
                Some('\n') => Kind::Newline,
                Some(c) if is_break_space(c) => Kind::Space,
                _ => Kind::Word,
            };
            items.push(Item {
                span: si,
                start: at,
                end: at + cluster.len(),
                width,
                kind,
            });
            at += cluster.len();
        }
    }
    items
}

/// Whitespace a line may break at; the no-break spaces are not.
fn is_break_space(c: char) -> bool {
    c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}')
}

/// Greedy layout: the rows, each a list of item indices. `first` and `rest` are the columns
/// available on the first and on later rows.
fn layout(items: &[Item], first: usize, rest: usize) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut cur_w = 0usize;
    // Whitespace seen since the last word; placed only if the next word joins this row.
    let mut pending: Option<(std::ops::Range<usize>, usize)> = None;
    // At the start of the input or after a hard break, whitespace is indentation: kept.
    let mut hard_start = true;
    let room = |rows: &Vec<Vec<usize>>| if rows.is_empty() { first } else { rest };

    let mut i = 0;
    while i < items.len() {
        let kind = items[i].kind;
        if kind == Kind::Newline {
            rows.push(std::mem::take(&mut cur));
            cur_w = 0;
            pending = None;
            hard_start = true;
            i += 1;
            continue;
        }
        // A token: the run of items of one kind.
        let mut j = i;
        let mut w = 0usize;
        while j < items.len() && items[j].kind == kind {
            w = w.saturating_add(items[j].width);
            j += 1;
        }
        let token = i..j;
        i = j;

        if kind == Kind::Space && !hard_start {
            pending = Some((token, w));
            continue;
        }
        hard_start = false;

        let pw = pending.as_ref().map_or(0, |p| p.1);
        if cur_w.saturating_add(pw).saturating_add(w) <= room(&rows) {
            if let Some((p, pw)) = pending.take() {
                cur.extend(p);
                cur_w += pw;
            }
            cur.extend(token);
            cur_w += w;
            continue;
        }
        pending = None;
        if !cur.is_empty() {
            rows.push(std::mem::take(&mut cur));
            cur_w = 0;
        }
        if w <= room(&rows) {
            cur.extend(token);
            cur_w = w;
            continue;
        }
        // Longer than a whole row: break it between clusters. A row always takes at least
        // one cluster, so this ends even when one cluster is wider than the row.
        for k in token {
            let iw = items[k].width;
            if !cur.is_empty() && cur_w.saturating_add(iw) > room(&rows) {
                rows.push(std::mem::take(&mut cur));
                cur_w = 0;
            }
            cur.push(k);
            cur_w = cur_w.saturating_add(iw);
        }
    }
    // A final hard break does not open an empty row; an empty input still gives one row.
    let ends_with_break = items.last().is_some_and(|it| it.kind == Kind::Newline);
    if !cur.is_empty() || rows.is_empty() || !ends_with_break {
        rows.push(cur);
    }
    rows
}

/// Appends the items of one row as spans, merging neighbours from the same span.
fn push_items(out: &mut Vec<Span<'static>>, line: &Line<'_>, items: &[Item], row: &[usize]) {
    let mut k = 0;
    while k < row.len() {
        let first = &items[row[k]];
        let mut end = first.end;
        let mut m = k + 1;
        while m < row.len() {
            let it = &items[row[m]];
            if it.span != first.span || it.start != end {
                break;
            }
            end = it.end;
            m += 1;
        }
        if let Some(span) = line.spans.get(first.span) {
            let text = span.content.get(first.start..end).unwrap_or_default();
            out.push(Span::styled(text.to_owned(), span.style));
        }
        k = m;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier, Style};

    /// A tiny deterministic generator for the fuzz loops (xorshift64*).
    pub(crate) struct Rng(pub u64);

    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        pub(crate) fn below(&mut self, n: usize) -> usize {
            if n == 0 {
                0
            } else {
                (self.next() % n as u64) as usize
            }
        }
    }

    pub(crate) fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(text).collect()
    }

    #[test]
    fn short_line_is_unchanged() {
        let out = wrap_line(&Line::from("hello world"), 20);
        assert_eq!(texts(&out), ["hello world"]);
    }

    #[test]
    fn breaks_at_spaces_and_drops_them() {
        let out = wrap_line(&Line::from("the quick brown fox jumps"), 10);
        assert_eq!(texts(&out), ["the quick", "brown fox", "jumps"]);
        let out = wrap_line(&Line::from("aaaa bbbb"), 4);
        assert_eq!(texts(&out), ["aaaa", "bbbb"]);
    }

    #[test]
    fn keeps_indentation_but_not_wrapped_spaces() {
        let out = wrap_line(&Line::from("    let x = 1;   let y = 2;"), 14);
        assert_eq!(texts(&out), ["    let x = 1;", "let y = 2;"]);
    }

    #[test]
    fn long_words_are_broken() {
        let out = wrap_line(&Line::from("see https://example.com/a/very/long/path ok"), 10);
        assert_eq!(
            texts(&out),
            ["see", "https://ex", "ample.com/", "a/very/lon", "g/path ok"]
        );
    }

    #[test]
    fn cjk_counts_two_columns() {
        let out = wrap_line(&Line::from("日本語のテキスト"), 6);
        assert_eq!(texts(&out), ["日本語", "のテキ", "スト"]);
        // An odd width leaves a column free rather than splitting a character.
        let out = wrap_line(&Line::from("日本語の"), 5);
        assert_eq!(texts(&out), ["日本", "語の"]);
        for l in &out {
            assert!(l.width() <= 5);
        }
    }

    #[test]
    fn zero_width_stays_with_its_base() {
        let out = wrap_line(&Line::from("e\u{301}e\u{301}e\u{301}e\u{301}"), 2);
        assert_eq!(texts(&out), ["e\u{301}e\u{301}", "e\u{301}e\u{301}"]);
        // An emoji ZWJ sequence is one cluster of width 2.
        let family = "👨\u{200d}👩\u{200d}👧";
        assert_eq!(clusters(family).count(), 1);
        assert_eq!(display_width(family), 2);
    }

    #[test]
    fn width_zero_and_one_terminate() {
        let line = Line::from("ab 世界 c\u{301}");
        assert_eq!(texts(&wrap_line(&line, 0)), ["ab 世界 c\u{301}"]);
        let out = wrap_line(&line, 1);
        assert_eq!(texts(&out), ["a", "b", "世", "界", "c\u{301}"]);
        assert!(wrap_line(&Line::from(""), 0).len() == 1);
        assert!(wrap_line(&Line::from(""), 1).len() == 1);
    }

    #[test]
    fn styles_survive_a_break() {
        let red = Style::new().fg(Color::Red);
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let line = Line::from(vec![
            Span::styled("hello ", red),
            Span::styled("world wi", bold),
            Span::styled("de", red),
        ])
        .style(Style::new().bg(Color::Black));
        let out = wrap_line(&line, 8);
        assert_eq!(texts(&out), ["hello", "world", "wide"]);
        assert_eq!(out[0].spans[0].style, red);
        assert_eq!(out[1].spans.len(), 1);
        assert_eq!(out[1].spans[0].style, bold);
        // A word made of two spans stays one word and keeps both styles.
        assert_eq!(out[2].spans[0].content, "wi");
        assert_eq!(out[2].spans[0].style, bold);
        assert_eq!(out[2].spans[1].content, "de");
        assert_eq!(out[2].spans[1].style, red);
        assert!(out.iter().all(|l| l.style == Style::new().bg(Color::Black)));
    }

    #[test]
    fn newline_in_a_span_is_a_hard_break() {
        let out = wrap_line(&Line::from(Span::raw("a\n  b\n")), 10);
        assert_eq!(texts(&out), ["a", "  b"]);
        let out = wrap_line(&Line::from(Span::raw("a\n\nb")), 10);
        assert_eq!(texts(&out), ["a", "", "b"]);
    }

    #[test]
    fn prefixes_give_a_hanging_indent() {
        let out = wrap_prefixed(
            &Line::from("one two three four"),
            12,
            &[Span::raw("• ")],
            &[Span::raw("  ")],
        );
        assert_eq!(texts(&out), ["• one two", "  three four"]);
        // No room: the prefix goes, the text keeps the width.
        let out = wrap_prefixed(&Line::from("abcd"), 3, &[Span::raw("│ ")], &[Span::raw("│ ")]);
        assert_eq!(texts(&out), ["abc", "d"]);
    }

    #[test]
    fn wrap_lines_flattens() {
        let out = wrap_lines(&[Line::from("a b"), Line::from(""), Line::from("c")], 1);
        assert_eq!(texts(&out), ["a", "b", "", "c"]);
    }

    #[test]
    fn random_lines_fit_and_keep_their_text() {
        let mut rng = Rng(42);
        let alphabet = ["a", "bc", " ", "  ", "世", "e\u{301}", "\u{a0}", "-", "\n", "🎉"];
        for _ in 0..5_000 {
            let spans: Vec<Span<'static>> = (0..rng.below(6))
                .map(|_| {
                    let s: String = (0..rng.below(8)).map(|_| alphabet[rng.below(alphabet.len())]).collect();
                    Span::styled(s, Style::new().fg(Color::Indexed(rng.below(8) as u8)))
                })
                .collect();
            let line = Line::from(spans);
            let width = rng.below(12) as u16;
            let out = wrap_line(&line, width);
            assert!(!out.is_empty());
            let nonspace = |s: &str| s.chars().filter(|c| !is_break_space(*c)).count();
            assert_eq!(
                out.iter().map(|l| nonspace(&text(l))).sum::<usize>(),
                nonspace(&text(&line)),
                "lost text wrapping {line:?} at {width}"
            );
            if width >= 2 {
                for l in &out {
                    assert!(l.width() <= usize::from(width), "{l:?} wider than {width}");
                }
            }
        }
    }
}
