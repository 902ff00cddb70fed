//! Assistant text as markdown, rendered to styled lines wrapped to a width.
//!
//! The input may be half a message (it is re-rendered while it streams): pulldown-cmark closes
//! whatever is open at the end of the input, so an unclosed code fence renders as a code block
//! and half a `**` as text. All text is cleaned by [`sanitize::clean`] — the source before
//! parsing (so escape sequences go whole) and every piece of text after (entities such as
//! `&#27;` decode to controls).
//!
//! Layout: blocks are separated by one blank line; a list item's marker starts its first line
//! and its later lines hang under the text; a block quote prefixes `│ `; a fenced code block is
//! highlighted by its language with syntect (loaded once, on first use) and otherwise shown in
//! the plain code style. Everything, code included, is wrapped to the width.

use std::sync::OnceLock;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

use crate::sanitize;
use crate::wrap::{self, spans_width};

/// The syntect theme of code blocks.
pub const CODE_THEME: &str = "base16-ocean.dark";

// Beyond these, a code block is shown plain: syntect's regexes are not linear on hostile
// input, and a megabyte of minified JavaScript is not worth colouring.
const MAX_HIGHLIGHT_BYTES: usize = 256 * 1024;
const MAX_HIGHLIGHT_LINE: usize = 2_000;

fn heading_style(level: HeadingLevel) -> Style {
    let base = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    match level {
        HeadingLevel::H1 => base.add_modifier(Modifier::UNDERLINED),
        HeadingLevel::H2 | HeadingLevel::H3 => base,
        _ => base.add_modifier(Modifier::ITALIC),
    }
}
/// Inline code, and code blocks of an unknown language.
pub const CODE: Style = Style::new().fg(Color::Yellow);
const LINK: Style = Style::new().fg(Color::Blue).add_modifier(Modifier::UNDERLINED);
const DIM: Style = Style::new().fg(Color::DarkGray);
const QUOTE_BAR: Style = Style::new().fg(Color::DarkGray);

/// Renders markdown `text` into lines of at most `width` columns (0: not wrapped).
pub fn render(text: &str, width: u16) -> Vec<Line<'static>> {
    let source = sanitize::clean(text);
    let mut r = Renderer::new(width);
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(&source, options) {
        r.event(event);
    }
    r.finish()
}

/// Text from the parser, cleaned (see the module docs) and owned.
fn own(s: &str) -> String {
    sanitize::clean(s).into_owned()
}

enum Container {
    Quote,
    List {
        next: Option<u64>,
        /// Items hold paragraphs: a blank line between items.
        loose: bool,
    },
    Item {
        marker: Span<'static>,
        /// The marker has not been drawn yet: it goes on the item's first line.
        pending: bool,
    },
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<Vec<Span<'static>>>>,
    row: Vec<Vec<Span<'static>>>,
    has_head: bool,
}

struct Renderer {
    width: u16,
    out: Vec<Line<'static>>,
    /// The inline content of the block being read.
    inline: Vec<Span<'static>>,
    /// Inline styles in force (emphasis, strong, link, heading…), innermost last.
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// A block ended: the next one starts after a blank line.
    need_blank: bool,
    /// Inside a code block: its language and text so far.
    code: Option<(String, String)>,
    /// Open links: their URL and where in `inline` their text starts.
    links: Vec<(String, usize)>,
    /// Open images: where in `inline` their alt text starts.
    images: Vec<usize>,
    table: Option<Table>,
}

impl Renderer {
    fn new(width: u16) -> Self {
        Renderer {
            width,
            out: Vec::new(),
            inline: Vec::new(),
            styles: Vec::new(),
            containers: Vec::new(),
            need_blank: false,
            code: None,
            links: Vec::new(),
            images: Vec::new(),
            table: None,
        }
    }

    fn style(&self) -> Style {
        self.styles.iter().fold(Style::new(), |acc, s| acc.patch(*s))
    }

    fn push(&mut self, text: String, style: Style) {
        if !text.is_empty() {
            self.inline.push(Span::styled(text, style));
        }
    }

    /// Inline text; a newline in it (HTML blocks) ends the line.
    fn push_text(&mut self, text: &str, style: Style) {
        for (n, piece) in own(text).split('\n').enumerate() {
            if n > 0 {
                self.flush_inline();
            }
            self.push(piece.to_owned(), style);
        }
    }

    /// The prefixes of the next line: for its first row (with any pending list marker) and
    /// for the rows it wraps to (the hanging indent).
    fn prefixes(&self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let (mut first, mut rest) = (Vec::new(), Vec::new());
        for c in &self.containers {
            match c {
                Container::Quote => {
                    first.push(Span::styled("│ ", QUOTE_BAR));
                    rest.push(Span::styled("│ ", QUOTE_BAR));
                }
                Container::Item { marker, pending } => {
                    let indent = " ".repeat(wrap::display_width(&marker.content));
                    first.push(if *pending {
                        marker.clone()
                    } else {
                        Span::raw(indent.clone())
                    });
                    rest.push(Span::raw(indent));
                }
                Container::List { .. } => {}
            }
        }
        (first, rest)
    }

    /// Columns left for text after the prefixes.
    fn room(&self) -> usize {
        let (first, rest) = self.prefixes();
        let width = usize::from(self.width);
        let used = spans_width(&first).max(spans_width(&rest));
        if width == 0 {
            0
        } else if wrap::prefix_fits(used, self.width) {
            width - used
        } else {
            width // the prefixes will be dropped
        }
    }

    /// Wraps `line` under the current prefixes into the output.
    fn emit(&mut self, line: Line<'_>) {
        let (first, rest) = self.prefixes();
        self.out.extend(wrap::wrap_prefixed(&line, self.width, &first, &rest));
        for c in &mut self.containers {
            if let Container::Item { pending, .. } = c {
                *pending = false;
            }
        }
    }

    fn blank(&mut self) {
        // The indent of the enclosing blocks, without trailing spaces: "│" in a quote.
        let (_, mut rest) = self.prefixes();
        while let Some(last) = rest.last_mut() {
            let trimmed = last.content.trim_end().to_owned();
            if trimmed.is_empty() {
                rest.pop();
            } else {
                last.content = trimmed.into();
                break;
            }
        }
        self.out
            .extend(wrap::wrap_prefixed(&Line::default(), self.width, &rest, &rest));
    }

    fn flush_inline(&mut self) {
        if !self.inline.is_empty() {
            let spans = std::mem::take(&mut self.inline);
            self.emit(Line::from(spans));
        }
    }

    fn start_block(&mut self) {
        self.flush_inline();
        if self.need_blank && !self.out.is_empty() {
            self.blank();
        }
        self.need_blank = false;
    }

    fn end_block(&mut self) {
        self.flush_inline();
        self.need_blank = true;
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => match &mut self.code {
                Some((_, code)) => code.push_str(&t),
                None => self.push_text(&t, self.style()),
            },
            Event::Code(t) => self.push(own(&t), self.style().patch(CODE)),
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                self.push(own(&t), self.style().patch(CODE));
            }
            Event::Html(t) | Event::InlineHtml(t) => self.push_text(&t, self.style().patch(DIM)),
            Event::FootnoteReference(t) => self.push(format!("[^{}]", own(&t)), DIM),
            Event::SoftBreak => self.push(" ".into(), self.style()),
            Event::HardBreak => {
                // In a table cell, a hard break would end the row: a space instead.
                if self.table.is_some() {
                    self.push(" ".into(), self.style());
                } else {
                    self.flush_inline();
                }
            }
            Event::Rule => {
                self.start_block();
                let rule = "─".repeat(self.room().max(1));
                self.emit(Line::from(Span::styled(rule, DIM)));
                self.need_blank = true;
            }
            Event::TaskListMarker(done) => {
                let (mark, style) = if done {
                    ("[x] ", Style::new().fg(Color::Green))
                } else {
                    ("[ ] ", DIM)
                };
                self.push(mark.into(), style);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                // A paragraph directly in an item makes its list loose.
                if matches!(self.containers.last(), Some(Container::Item { .. })) {
                    let n = self.containers.len();
                    if let Some(Container::List { loose, .. }) =
                        n.checked_sub(2).and_then(|i| self.containers.get_mut(i))
                    {
                        *loose = true;
                    }
                }
                self.start_block();
            }
            Tag::Heading { level, .. } => {
                self.start_block();
                self.styles.push(heading_style(level));
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => own(&info),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::HtmlBlock => self.start_block(),
            Tag::List(first) => {
                self.start_block();
                self.containers.push(Container::List {
                    next: first,
                    loose: false,
                });
            }
            Tag::Item => {
                self.flush_inline();
                let depth = self
                    .containers
                    .iter()
                    .filter(|c| matches!(c, Container::List { .. }))
                    .count();
                let marker = match self.containers.last_mut() {
                    Some(Container::List { next, loose }) => {
                        if !*loose {
                            self.need_blank = false;
                        }
                        match next {
                            Some(n) => {
                                let m = format!("{n}. ");
                                *n = n.saturating_add(1);
                                Span::raw(m)
                            }
                            None => Span::styled(bullet(depth), DIM),
                        }
                    }
                    _ => Span::styled(bullet(depth), DIM),
                };
                self.containers.push(Container::Item { marker, pending: true });
            }
            Tag::Table(_) => {
                self.start_block();
                self.table = Some(Table::default());
            }
            Tag::TableHead => {
                if let Some(t) = &mut self.table {
                    t.has_head = true;
                }
            }
            Tag::TableRow | Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.styles.push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.styles.push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.links.push((own(&dest_url), self.inline.len()));
                self.styles.push(LINK);
            }
            Tag::Image { .. } => {
                self.images.push(self.inline.len());
                self.styles.push(Style::new().add_modifier(Modifier::ITALIC));
            }
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.start_block(),
            Tag::Superscript | Tag::Subscript => self.styles.push(Style::new()),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.end_block(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.need_blank = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.code_block(&lang, &code);
                }
                self.need_blank = true;
            }
            TagEnd::List(_) => {
                self.flush_inline();
                self.containers.pop();
                self.need_blank = true;
            }
            TagEnd::Item => {
                self.flush_inline();
                // An empty item (or one still streaming) shows its marker.
                if let Some(Container::Item { pending: true, .. }) = self.containers.last() {
                    self.emit(Line::default());
                }
                self.containers.pop();
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.render_table(t);
                }
                self.need_blank = true;
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(t) = &mut self.table {
                    t.row.push(cell);
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Superscript | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, start)) = self.links.pop() {
                    let text: String = self
                        .inline
                        .get(start..)
                        .unwrap_or_default()
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    // An autolink's text is its URL: don't say it twice.
                    let same = text == url || url.strip_prefix("mailto:") == Some(text.as_str());
                    if !url.is_empty() && !same {
                        self.push(format!(" ({url})"), DIM);
                    }
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                if let Some(start) = self.images.pop() {
                    let start = start.min(self.inline.len());
                    if start == self.inline.len() {
                        self.push("[image]".into(), DIM);
                    } else {
                        self.inline.insert(start, Span::styled("[image: ", DIM));
                        self.push("]".into(), DIM);
                    }
                }
            }
            TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => self.end_block(),
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let code = sanitize::clean(code);
        let code = code.strip_suffix('\n').unwrap_or(&code);
        let lines = highlight(lang, code).unwrap_or_else(|| {
            code.split('\n')
                .map(|l| Line::from(Span::styled(l.to_owned(), CODE)))
                .collect()
        });
        for line in lines {
            self.emit(line);
        }
    }

    fn render_table(&mut self, t: Table) {
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; cols];
        for row in &t.rows {
            for (c, cell) in row.iter().enumerate() {
                widths[c] = widths[c].max(spans_width(cell));
            }
        }
        let total = widths.iter().sum::<usize>() + 3 * cols.saturating_sub(1);
        let room = self.room();
        // Columns line up when the table fits; otherwise rows are just wrapped.
        let aligned = room == 0 || total <= room;
        let sep = || Span::styled(" │ ", DIM);
        for (r, row) in t.rows.into_iter().enumerate() {
            let head = r == 0 && t.has_head;
            let mut spans = Vec::new();
            let n = row.len();
            for (c, cell) in row.into_iter().enumerate() {
                if c > 0 {
                    spans.push(sep());
                }
                let w = spans_width(&cell);
                for mut s in cell {
                    if head {
                        s.style = s.style.add_modifier(Modifier::BOLD);
                    }
                    spans.push(s);
                }
                if aligned && c + 1 < cols {
                    spans.push(Span::raw(" ".repeat(widths[c] - w)));
                }
            }
            if aligned {
                // Missing cells, so the bars of a short row line up too.
                for (c, w) in widths.iter().enumerate().skip(n) {
                    spans.push(sep());
                    if c + 1 < cols {
                        spans.push(Span::raw(" ".repeat(*w)));
                    }
                }
            }
            self.emit(Line::from(spans));
            if head {
                let rule = if aligned {
                    widths.iter().map(|w| "─".repeat(*w)).collect::<Vec<_>>().join("─┼─")
                } else {
                    "─".repeat(room.max(1))
                };
                self.emit(Line::from(Span::styled(rule, DIM)));
            }
        }
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        if let Some((lang, code)) = self.code.take() {
            self.code_block(&lang, &code);
        }
        if let Some(t) = self.table.take() {
            self.render_table(t);
        }
        self.flush_inline();
        self.out
    }
}

fn bullet(depth: usize) -> String {
    let b = ["• ", "◦ ", "▪ "];
    b[depth.saturating_sub(1) % b.len()].to_owned()
}

struct Highlighter {
    syntaxes: SyntaxSet,
    theme: Option<Theme>,
}

/// syntect's syntaxes and theme, loaded on the first code block that names a language.
fn highlighter() -> &'static Highlighter {
    static H: OnceLock<Highlighter> = OnceLock::new();
    H.get_or_init(|| Highlighter {
        syntaxes: SyntaxSet::load_defaults_newlines(),
        theme: ThemeSet::load_defaults().themes.remove(CODE_THEME),
    })
}

/// The syntax for a fence's info string (`rust`, `rs`, `rust,ignore`, `python title="x"`).
fn find_syntax<'a>(set: &'a SyntaxSet, info: &str) -> Option<&'a SyntaxReference> {
    let token = info
        .split(|c: char| c == ',' || c.is_whitespace())
        .next()?
        .trim_matches(|c| c == '{' || c == '}' || c == '.')
        .to_ascii_lowercase();
    // Common names the default set knows under another one.
    let token = match token.as_str() {
        "ts" | "typescript" | "tsx" | "jsx" | "mjs" | "cjs" => "js",
        "shell" | "zsh" | "console" | "shellsession" => "bash",
        "golang" => "go",
        "c++" => "cpp",
        "jsonc" | "json5" => "json",
        "py3" | "python3" => "py",
        other => other,
    };
    if token.is_empty() {
        return None;
    }
    set.find_syntax_by_token(token)
}

/// `code` highlighted, one output line per source line; `None` when the language is unknown
/// (or not given) or the block is too big to colour.
fn highlight(info: &str, code: &str) -> Option<Vec<Line<'static>>> {
    if info.trim().is_empty()
        || code.len() > MAX_HIGHLIGHT_BYTES
        || code.split('\n').any(|l| l.len() > MAX_HIGHLIGHT_LINE)
    {
        return None;
    }
    let h = highlighter();
    let theme = h.theme.as_ref()?;
    let syntax = find_syntax(&h.syntaxes, info)?;
    let mut hl = HighlightLines::new(syntax, theme);
    let mut lines = Vec::new();
    for line in LinesWithEndings::from(code) {
        let ranges = hl.highlight_line(line, &h.syntaxes).ok()?;
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .filter_map(|(style, text)| {
                let text = text.trim_end_matches('\n');
                (!text.is_empty()).then(|| Span::styled(text.to_owned(), convert(style)))
            })
            .collect();
        lines.push(Line::from(spans));
    }
    if code.is_empty() || code.ends_with('\n') {
        lines.push(Line::default()); // LinesWithEndings yields no empty last line
    }
    Some(lines)
}

fn convert(style: syntect::highlighting::Style) -> Style {
    let c = style.foreground;
    let mut s = Style::new().fg(Color::Rgb(c.r, c.g, c.b));
    if style.font_style.contains(FontStyle::BOLD) {
        s = s.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        s = s.add_modifier(Modifier::ITALIC);
    }
    if style.font_style.contains(FontStyle::UNDERLINE) {
        s = s.add_modifier(Modifier::UNDERLINED);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::tests::{text, Rng};
    use std::collections::HashSet;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(text).collect()
    }

    /// The first span whose text contains `needle`.
    fn span<'a>(lines: &'a [Line<'static>], needle: &str) -> &'a Span<'static> {
        lines
            .iter()
            .flat_map(|l| &l.spans)
            .find(|s| s.content.contains(needle))
            .unwrap_or_else(|| panic!("no span with {needle:?} in {:?}", texts(lines)))
    }

    fn has(style: Style, m: Modifier) -> bool {
        style.add_modifier.contains(m)
    }

    #[test]
    fn paragraphs_are_separated_by_a_blank_line() {
        let out = render("one\ntwo\n\nthree", 80);
        assert_eq!(texts(&out), ["one two", "", "three"]);
    }

    #[test]
    fn headings_are_bold_and_coloured() {
        let out = render("# Title\n\n## Sub\ntext", 80);
        assert_eq!(texts(&out), ["Title", "", "Sub", "", "text"]);
        let h = span(&out, "Title");
        assert!(has(h.style, Modifier::BOLD));
        assert_eq!(h.style.fg, Some(Color::Cyan));
        assert!(has(span(&out, "Sub").style, Modifier::BOLD));
        assert!(!has(span(&out, "text").style, Modifier::BOLD));
    }

    #[test]
    fn emphasis_strong_strikethrough_code() {
        let out = render("*it* **bold** ~~gone~~ `code` ***both***", 80);
        assert_eq!(texts(&out), ["it bold gone code both"]);
        assert!(has(span(&out, "it").style, Modifier::ITALIC));
        assert!(has(span(&out, "bold").style, Modifier::BOLD));
        assert!(has(span(&out, "gone").style, Modifier::CROSSED_OUT));
        assert_eq!(span(&out, "code").style.fg, CODE.fg);
        let both = span(&out, "both").style;
        assert!(has(both, Modifier::BOLD) && has(both, Modifier::ITALIC));
    }

    #[test]
    fn lists_nest_and_hang() {
        let out = render("- one\n- two\n  - inner\n- three", 80);
        assert_eq!(texts(&out), ["• one", "• two", "  ◦ inner", "• three"]);
        let out = render("3. a\n4. b", 80);
        assert_eq!(texts(&out), ["3. a", "4. b"]);
        // A wrapped item hangs under its text, not under the bullet.
        let out = render("- alpha beta gamma delta", 14);
        assert_eq!(texts(&out), ["• alpha beta", "  gamma delta"]);
        let out = render("1. alpha beta gamma\n   - x y z w v", 12);
        assert_eq!(
            texts(&out),
            ["1. alpha", "   beta", "   gamma", "   ◦ x y z w", "     v"]
        );
    }

    #[test]
    fn loose_lists_and_surroundings() {
        let out = render("before\n\n- a\n\n- b\n\nafter", 80);
        assert_eq!(texts(&out), ["before", "", "• a", "", "• b", "", "after"]);
        let out = render("- [x] done\n- [ ] todo", 80);
        assert_eq!(texts(&out), ["• [x] done", "• [ ] todo"]);
    }

    #[test]
    fn block_quotes_have_a_bar() {
        let out = render("> quoted text\n>\n> more\n\nout", 80);
        assert_eq!(texts(&out), ["│ quoted text", "│", "│ more", "", "out"]);
        let out = render("> a b c d e f", 7);
        assert_eq!(texts(&out), ["│ a b c", "│ d e f"]);
        let out = render("> - item\n>   > deep", 80);
        assert_eq!(texts(&out), ["│ • item", "│   │ deep"]);
    }

    #[test]
    fn links_show_their_url_dimmed() {
        let out = render("see [the docs](https://example.com/docs) now", 80);
        assert_eq!(texts(&out), ["see the docs (https://example.com/docs) now"]);
        assert!(has(span(&out, "the docs").style, Modifier::UNDERLINED));
        assert_eq!(span(&out, "(https").style, DIM);
        // An autolink is not repeated.
        let out = render("<https://example.com>", 80);
        assert_eq!(texts(&out), ["https://example.com"]);
    }

    #[test]
    fn images_show_their_alt_text() {
        let out = render("![a cat](cat.png) and ![](x.png)", 80);
        assert_eq!(texts(&out), ["[image: a cat] and [image]"]);
    }

    #[test]
    fn rules() {
        let out = render("a\n\n---\n\nb", 10);
        assert_eq!(texts(&out), ["a", "", "──────────", "", "b"]);
    }

    #[test]
    fn rust_code_is_highlighted() {
        let out = render("```rust\nfn main() {\n    let x: u32 = 1;\n}\n```", 80);
        assert_eq!(texts(&out), ["fn main() {", "    let x: u32 = 1;", "}"]);
        let colours: HashSet<_> = out.iter().flat_map(|l| &l.spans).map(|s| s.style.fg).collect();
        assert!(colours.len() > 1, "{colours:?}");
        assert!(colours.iter().all(|c| matches!(c, Some(Color::Rgb(..)))));
        // `rs`, and an info string with attributes, find it too.
        let out = render("```rs,ignore\nfn main() {}\n```", 80);
        assert!(matches!(out[0].spans[0].style.fg, Some(Color::Rgb(..))));
    }

    #[test]
    fn unknown_language_is_plain_code() {
        for src in ["```nosuchlang\nx = 1\n```", "```\nx = 1\n```", "    x = 1"] {
            let out = render(src, 80);
            assert_eq!(texts(&out), ["x = 1"], "{src:?}");
            assert_eq!(out[0].spans[0].style, CODE);
        }
    }

    #[test]
    fn code_is_wrapped_and_blank_lines_kept() {
        let out = render("```\naaaa bbbb\n\ncccc\n```", 5);
        assert_eq!(texts(&out), ["aaaa", "bbbb", "", "cccc"]);
    }

    #[test]
    fn escape_sequences_in_code_and_entities_are_cleaned() {
        let out = render(
            "```sh\necho \x1b]0;pwned\x07hi\x1b[2J\n```\n\nx &#27;[2J &#x9b;6n y",
            80,
        );
        for line in &out {
            assert!(sanitize::is_clean(&text(line)), "{:?}", text(line));
        }
        assert_eq!(texts(&out)[0], "echo hi");
    }

    #[test]
    fn html_is_shown_as_text() {
        let out = render("<details>\n<summary>more</summary>\n</details>\n\na <b>b</b>", 80);
        assert_eq!(
            texts(&out),
            ["<details>", "<summary>more</summary>", "</details>", "", "a <b>b</b>"]
        );
    }

    #[test]
    fn tables_use_bars() {
        let out = render("| a | bb |\n|---|---|\n| ccc | d |", 80);
        assert_eq!(texts(&out), ["a   │ bb", "────┼───", "ccc │ d"]);
        assert!(has(span(&out, "a").style, Modifier::BOLD));
    }

    #[test]
    fn half_streamed_input_renders() {
        let out = render("Here:\n\n```rust\nfn main() {\n    let", 80);
        assert_eq!(texts(&out), ["Here:", "", "fn main() {", "    let"]);
        let out = render("some **bold", 80);
        assert_eq!(texts(&out), ["some **bold"]);
        let out = render("- ", 80);
        assert_eq!(texts(&out), ["• "]);
        let out = render("[link](http://exa", 80);
        assert_eq!(texts(&out), ["[link](http://exa"]);
        let out = render("| a | b |\n|--", 80);
        assert!(!out.is_empty());
        // Every prefix of a document renders.
        let doc = "# T\n\n- a **b** `c`\n  1. d\n\n> q [l](u)\n\n```py\nx = 1\n```\n\n| h |\n|---|\n| v |\n";
        for end in (0..=doc.len()).filter(|i| doc.is_char_boundary(*i)) {
            render(&doc[..end], 20);
        }
    }

    fn mixed_document(sections: usize) -> String {
        let mut doc = String::new();
        for i in 0..sections {
            doc.push_str(&format!(
                "## Section {i}\n\nSome *text* with **bold**, `code` and a [link](https://example.com/{i}). \
                 It goes on long enough to wrap at least once at a normal width, 世界 included.\n\n\
                 - item one\n- item two\n  1. nested\n  2. nested again\n\n\
                 > a quote\n\n\
                 ```rust\nfn f{i}(x: u32) -> u32 {{\n    x + {i} // comment\n}}\n```\n\n\
                 | k | v |\n|---|---|\n| a | {i} |\n\n---\n\n"
            ));
        }
        doc
    }

    #[test]
    fn a_thousand_lines_render_within_the_width() {
        let doc = mixed_document(50);
        assert!(doc.lines().count() >= 1_000);
        for width in [100u16, 40, 7, 1] {
            let out = render(&doc, width);
            assert!(out.len() >= 1_000);
            for line in &out {
                assert!(sanitize::is_clean(&text(line)));
                if width >= 2 {
                    assert!(line.width() <= usize::from(width), "{line:?} at {width}");
                }
            }
        }
    }

    #[test]
    fn deep_nesting_stays_within_the_width() {
        let doc = format!("{}deep text here\n\n{}x", "> ".repeat(500), "- ".repeat(300));
        for width in [0u16, 1, 10, 80] {
            let out = render(&doc, width);
            assert!(!out.is_empty());
            if width >= 2 {
                assert!(out.iter().all(|l| l.width() <= usize::from(width)));
            }
        }
    }

    #[test]
    fn random_input_never_panics() {
        let mut rng = Rng(7);
        let alphabet = [
            "#", "*", "_", "`", "```", "~", "-", "+", "1.", ">", "|", "[", "]", "(", ")", "!", "<", ">", "&#27;", "\\",
            " ", "  ", "\n", "\n\n", "\t", "a", "word", "世", "\x1b", "\x1b[", "\u{9b}", "\u{202e}", "---", "http://x",
            "e\u{301}",
        ];
        for _ in 0..3_000 {
            let s: String = (0..rng.below(40))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let width = rng.below(30) as u16;
            for line in render(&s, width) {
                assert!(sanitize::is_clean(&text(&line)), "{s:?}");
                if width >= 2 {
                    assert!(line.width() <= usize::from(width), "{s:?} at {width}: {line:?}");
                }
            }
        }
        for _ in 0..1_000 {
            let bytes: Vec<u8> = (0..rng.below(60)).map(|_| rng.below(256) as u8).collect();
            render(&String::from_utf8_lossy(&bytes), rng.below(20) as u16);
        }
    }

    /// Scratch timing, not a check: `cargo test -p cst-tui -- --ignored --nocapture render_speed`.
    #[test]
    #[ignore]
    fn render_speed() {
        let answer = "I looked at the parser. The bug is in `parse_header`: it reads the length \
            before checking the magic, so a short file panics.\n\n\
            ## The fix\n\n\
            Check the length first, then the magic:\n\n\
            ```rust\n\
            fn parse_header(buf: &[u8]) -> Result<Header, Error> {\n\
            \x20   if buf.len() < HEADER_LEN {\n\
            \x20       return Err(Error::Truncated { len: buf.len() });\n\
            \x20   }\n\
            \x20   if &buf[..4] != MAGIC {\n\
            \x20       return Err(Error::BadMagic);\n\
            \x20   }\n\
            \x20   let len = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);\n\
            \x20   Ok(Header { len: len as usize })\n\
            }\n\
            ```\n\n\
            Things to note:\n\n\
            - **Order matters**: the magic check needs 4 bytes, the length 8.\n\
            - The error now carries the length, which makes the log useful.\n\
            - I also added a test:\n  1. an empty buffer\n  2. a 7-byte buffer\n  3. a bad magic\n\n\
            > The old code relied on `buf[4..8]` panicking, which the fuzzer found in minutes.\n\n\
            | case | before | after |\n|---|---|---|\n| empty | panic | `Truncated` |\n| bad magic | panic | `BadMagic` |\n\n\
            See [the format spec](https://example.com/spec#header) for the layout. \
            Run `cargo test -p parser` to check; everything passes here.\n\n\
            Next steps:\n\n- run the fuzzer for an hour\n- cut 1.2.1 with the fix\n";
        let t0 = std::time::Instant::now();
        let first = render(answer, 100);
        let cold = t0.elapsed();
        let n = 200;
        let t1 = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(render(std::hint::black_box(answer), 100));
        }
        let warm = t1.elapsed() / n;
        for l in &first {
            println!("|{}|", text(l));
        }
        let plain = answer.replace("```rust", "```");
        let t3 = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(render(std::hint::black_box(&plain), 100));
        }
        println!("plain code block: {:?}", t3.elapsed() / n);
        println!(
            "source lines: {}, rendered lines: {}, first render (loads syntect): {cold:?}, then: {warm:?} per render",
            answer.lines().count(),
            first.len()
        );
    }
}
