//! The chat history: one cell per user message, answer, tool call, sub-agent or notice. Each
//! cell renders to wrapped lines once per width and keeps them, so a frame of a long session
//! only copies the lines that are on screen.

use std::time::{Duration, Instant};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::{diff, markdown, sanitize, wrap};
use cst_protocol::Outcome;

/// Lines of a folded tool output.
pub const FOLDED_OUTPUT_LINES: usize = 3;
/// Lines of an unfolded tool output (the rest is in the transcript).
pub const UNFOLDED_OUTPUT_LINES: usize = 200;
/// Bytes of a tool output kept for display: a 10 MB result must not slow a frame down.
pub const OUTPUT_DISPLAY_BYTES: usize = 64 * 1024;
/// Lines of a diff in a tool cell.
pub const DIFF_LINES: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

#[derive(Debug, Clone)]
pub struct ToolCell {
    pub call_id: String,
    pub tool: String,
    /// `builtin`, `wasm text-stats`, `MCP github`, `sub-agent` …
    pub source: String,
    pub args: Value,
    pub started: Instant,
    pub finished: Option<(Outcome, Duration)>,
    /// What went back to the model (cut to [`OUTPUT_DISPLAY_BYTES`]).
    pub output: String,
    pub output_lines: usize,
    /// The sub-agent that ran it.
    pub subagent: Option<u32>,
    /// The diff of `edit_file` / `write_file` at a width: computed once, not on every redraw of
    /// a call that is still running (a hostile model can send megabytes to diff).
    pub diff_cache: Option<(u16, Vec<Line<'static>>)>,
}

#[derive(Debug, Clone)]
pub enum CellKind {
    /// The home block: summary, hints, warnings, model and sandbox.
    Home(Vec<Line<'static>>),
    User(String),
    Assistant(String),
    Tool(Box<ToolCell>),
    SubAgent {
        n: u32,
        role: String,
        description: String,
        end: Option<String>,
    },
    Notice(Level, String),
}

pub struct Cell {
    pub kind: CellKind,
    /// Lines for (width, unfolded, the running second of a live tool call).
    cache: Option<(u16, bool, Option<u64>, Vec<Line<'static>>)>,
}

impl Cell {
    pub fn new(kind: CellKind) -> Self {
        Self { kind, cache: None }
    }

    /// Call after changing `kind`.
    pub fn invalidate(&mut self) {
        self.cache = None;
    }

    /// A running tool cell shows its elapsed seconds, so it is drawn afresh once a second.
    fn live_second(&self) -> Option<u64> {
        match &self.kind {
            CellKind::Tool(t) if t.finished.is_none() => Some(t.started.elapsed().as_secs()),
            _ => None,
        }
    }

    /// The cell's lines at `width`, with tool outputs unfolded or not.
    pub fn lines(&mut self, width: u16, unfolded: bool) -> &[Line<'static>] {
        let live = self.live_second();
        let fresh = matches!(&self.cache, Some((w, u, l, _)) if *w == width && *u == unfolded && *l == live);
        if !fresh {
            let lines = render(&mut self.kind, width, unfolded);
            self.cache = Some((width, unfolded, live, lines));
        }
        match &self.cache {
            Some((_, _, _, lines)) => lines,
            None => &[],
        }
    }

    pub fn height(&mut self, width: u16, unfolded: bool) -> usize {
        self.lines(width, unfolded).len()
    }
}

/// Keep at most [`OUTPUT_DISPLAY_BYTES`] of `output`, cut on a char boundary.
pub fn display_output(output: &str) -> (String, usize) {
    let lines = output.lines().count();
    if output.len() <= OUTPUT_DISPLAY_BYTES {
        return (output.to_string(), lines);
    }
    let mut end = OUTPUT_DISPLAY_BYTES;
    while !output.is_char_boundary(end) {
        end -= 1;
    }
    (output[..end].to_string(), lines)
}

/// `builtin:builtin` → `builtin`, `wasm:text-stats` → `wasm text-stats`, `mcp:gh` → `MCP gh`.
pub fn source_label(tool: &str, source: &str) -> String {
    if tool == "task" {
        return "sub-agent".into();
    }
    let (kind, owner) = source.split_once(':').unwrap_or((source, ""));
    let kind = if kind == "mcp" { "MCP" } else { kind };
    if owner.is_empty() || owner == kind || owner == "builtin" {
        kind.to_string()
    } else {
        format!("{kind} {owner}")
    }
}

/// The short form of a call's arguments: the one that says what it does.
pub fn args_short(tool: &str, args: &Value, max: usize) -> String {
    let pick = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    let text = match tool {
        "read_file" | "write_file" | "edit_file" | "list" => pick("path"),
        "grep" => pick("pattern").map(|p| match pick("path") {
            Some(path) => format!("{p}  in {path}"),
            None => p,
        }),
        "run_shell" => pick("command"),
        "ask_user" => pick("question"),
        "task" => pick("description").or_else(|| pick("prompt")),
        _ => None,
    };
    let text = text.unwrap_or_else(|| match args {
        Value::Object(m) if m.is_empty() => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    sanitize::one_line(&text, max)
}

fn outcome_span(finished: Option<(Outcome, Duration)>, started: Instant) -> Vec<Span<'static>> {
    match finished {
        None => vec![Span::styled(
            format!("◌ running{}", live_duration(started.elapsed())),
            Style::new().fg(Color::Yellow),
        )],
        Some((outcome, d)) => {
            let (mark, color) = match outcome {
                Outcome::Ok => ("✓", Color::Green),
                Outcome::Error => ("✗ error", Color::Red),
                Outcome::Denied => ("⊘ refused", Color::Red),
                Outcome::TimedOut => ("⏱ timed out", Color::Red),
                Outcome::Cancelled => ("⊘ cancelled", Color::Yellow),
            };
            vec![
                Span::styled(mark.to_string(), Style::new().fg(color)),
                Span::styled(format!(" {}", human_duration(d)), Style::new().fg(Color::DarkGray)),
            ]
        }
    }
}

/// `1234` → `1.2k`, `3400000` → `3.4M`: token counts in little room.
pub fn short_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// Time of something still running, in whole seconds (nothing under one): it changes once a
/// second, not every frame.
pub fn live_duration(d: Duration) -> String {
    match d.as_secs() {
        0 => String::new(),
        s if s < 60 => format!(" {s}s"),
        s => format!(" {}m{:02}s", s / 60, s % 60),
    }
}

pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

fn render(kind: &mut CellKind, width: u16, unfolded: bool) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut out = match kind {
        CellKind::Home(lines) => wrap::wrap_lines(lines, width),
        CellKind::User(text) => {
            let mut lines = Vec::new();
            for (i, l) in sanitize::clean(text).lines().enumerate() {
                let prefix = if i == 0 { "› " } else { "  " };
                lines.push(Line::from(vec![
                    Span::styled(prefix, Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)),
                    Span::styled(l.to_string(), Style::new().add_modifier(Modifier::BOLD)),
                ]));
            }
            wrap::wrap_lines(&lines, width)
        }
        CellKind::Assistant(text) => markdown::render(text, width),
        CellKind::Tool(t) => render_tool(t, width, unfolded),
        CellKind::SubAgent {
            n,
            role,
            description,
            end,
        } => {
            let state = match end {
                None => Span::styled("running", Style::new().fg(Color::Yellow)),
                Some(e) if e == "done" => Span::styled("done", Style::new().fg(Color::Green)),
                Some(e) => Span::styled(sanitize::one_line(e, 20), Style::new().fg(Color::Red)),
            };
            let line = Line::from(vec![
                Span::styled("◆ ", Style::new().fg(Color::Magenta)),
                Span::styled(
                    format!("sub-agent {n} ({})", sanitize::one_line(role, 30)),
                    Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
                ),
                Span::raw(format!(" {} ", sanitize::one_line(description, 80))),
                state,
                Span::styled("  /agents shows it", dim()),
            ]);
            wrap::wrap_line(&line, width)
        }
        CellKind::Notice(level, text) => {
            let (mark, style) = match level {
                Level::Info => ("• ", dim()),
                Level::Warning => ("⚠ ", Style::new().fg(Color::Yellow)),
                Level::Error => ("✗ ", Style::new().fg(Color::Red)),
            };
            let lines: Vec<Line> = sanitize::clean(text)
                .lines()
                .enumerate()
                .map(|(i, l)| {
                    Line::from(vec![
                        Span::styled(if i == 0 { mark } else { "  " }, style),
                        Span::styled(l.to_string(), style),
                    ])
                })
                .collect();
            wrap::wrap_lines(&lines, width)
        }
    };
    // A blank line between cells.
    out.push(Line::default());
    out
}

fn render_tool(t: &mut ToolCell, width: u16, unfolded: bool) -> Vec<Line<'static>> {
    let indent = if t.subagent.is_some() { "  " } else { "" };
    let mut head = vec![
        Span::raw(indent.to_string()),
        Span::styled("● ", Style::new().fg(Color::Blue)),
        Span::styled(
            sanitize::one_line(&t.tool, 40),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!("  {}", sanitize::one_line(&t.source, 30)), dim()),
    ];
    if let Some(n) = t.subagent {
        head.push(Span::styled(
            format!(" · sub-agent {n}"),
            Style::new().fg(Color::Magenta),
        ));
    }
    let short = args_short(&t.tool, &t.args, 80);
    if !short.is_empty() {
        head.push(Span::raw(format!("  {short}")));
    }
    head.push(Span::raw("  "));
    head.extend(outcome_span(t.finished, t.started));
    let mut lines = wrap::wrap_line(&Line::from(head), width);

    let body_width = width.saturating_sub(4).max(1);
    let pad = |l: Line<'static>| {
        let mut spans = vec![Span::raw(format!("{indent}    "))];
        spans.extend(l.spans);
        Line::from(spans)
    };
    // edit_file and write_file show what they change.
    if !matches!(&t.diff_cache, Some((w, _)) if *w == body_width) {
        let get = |k: &str| t.args.get(k).and_then(Value::as_str);
        let d = match (t.tool.as_str(), get("old_text"), get("new_text"), get("content")) {
            ("edit_file", Some(old), Some(new), _) => diff::edit_diff(old, new, body_width, DIFF_LINES),
            ("write_file", _, _, Some(content)) => diff::new_file(content, body_width, DIFF_LINES),
            _ => Vec::new(),
        };
        t.diff_cache = Some((body_width, d));
    }
    if let Some((_, d)) = &t.diff_cache {
        lines.extend(d.iter().cloned().map(pad));
    }

    if t.finished.is_some() && !t.output.is_empty() {
        let limit = if unfolded {
            UNFOLDED_OUTPUT_LINES
        } else {
            FOLDED_OUTPUT_LINES
        };
        let clean = sanitize::clean(&t.output);
        let shown: Vec<Line> = clean
            .lines()
            .take(limit)
            .enumerate()
            .map(|(i, l)| {
                Line::from(vec![
                    Span::styled(if i == 0 { "⎿ " } else { "  " }, dim()),
                    Span::raw(l.to_string()),
                ])
            })
            .collect();
        let mut wrapped = wrap::wrap_lines(&shown, body_width);
        let more = t.output_lines.saturating_sub(limit);
        if !unfolded && wrapped.len() > limit * 2 {
            wrapped.truncate(limit * 2);
        }
        lines.extend(wrapped.into_iter().map(pad));
        if more > 0 {
            let hint = if unfolded { "" } else { " (ctrl-o unfolds)" };
            lines.push(pad(Line::styled(format!("  … {more} more lines{hint}"), dim())));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_labels_name_the_extension_kind() {
        assert_eq!(source_label("read_file", "builtin:builtin"), "builtin");
        assert_eq!(source_label("wc", "wasm:text-stats"), "wasm text-stats");
        assert_eq!(source_label("mcp__gh__x", "mcp:gh"), "MCP gh");
        assert_eq!(source_label("task", "builtin:builtin"), "sub-agent");
    }

    #[test]
    fn a_huge_output_is_cut_for_display_on_a_char_boundary() {
        let big = "é".repeat(OUTPUT_DISPLAY_BYTES);
        let (shown, lines) = display_output(&big);
        assert!(shown.len() <= OUTPUT_DISPLAY_BYTES);
        assert_eq!(lines, 1);
    }
}
