//! Drawing the [`App`]: chat, sidebar, prompts, input, status bar and overlays. Works at any
//! size (a 20×6 terminal still shows the input and the status line).

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::app::{App, InputMode, Overlay};
use crate::cells::{self, live_duration};
use crate::{sanitize, slash, wrap};

/// The sidebar shows from this terminal width on.
pub const SIDEBAR_FROM_WIDTH: u16 = 90;
const SIDEBAR_WIDTH: u16 = 28;
/// Below this height the input box has no rules around it.
const INPUT_RULES_FROM_HEIGHT: u16 = 12;
const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

pub fn draw(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let prompt = prompt_lines(app, area.width);
    let input_rows = (app.input.lines().len() as u16).clamp(1, 6);
    // The input's rules above and below only when the terminal has rows to spare.
    let rules = if area.height >= INPUT_RULES_FROM_HEIGHT { 2 } else { 0 };
    // Chat keeps at least one row when there is room for it.
    let bottom = (prompt.len() as u16 + input_rows + rules).min(area.height.saturating_sub(1).max(1));
    let [main, bottom_area, status] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(bottom.min(area.height.saturating_sub(1))),
        Constraint::Length(1),
    ])
    .areas(area);

    let (chat, sidebar) = if main.width >= SIDEBAR_FROM_WIDTH && !app.mcp.is_empty() {
        let [c, s] = Layout::horizontal([Constraint::Min(0), Constraint::Length(SIDEBAR_WIDTH)]).areas(main);
        (c, Some(s))
    } else {
        (main, None)
    };
    draw_chat(frame, app, chat);
    if let Some(s) = sidebar {
        draw_sidebar(frame, app, s);
    }
    draw_bottom(frame, app, bottom_area, prompt);
    draw_status(frame, app, status);
    draw_completions(frame, app, bottom_area);
    if app.overlay.is_some() {
        draw_overlay(frame, app, main);
    }
}

/// Visible chat lines: walk the cells from the newest until the viewport is full.
fn draw_chat(frame: &mut Frame, app: &mut App, area: Rect) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let width = area.width.saturating_sub(1).max(1);
    let height = area.height as usize;
    let unfolded = app.unfolded;
    // Total height, to clamp the scroll (cached per cell, so this is cheap).
    let total: usize = app.cells.iter_mut().map(|c| c.height(width, unfolded)).sum();
    let max_scroll = total.saturating_sub(height);
    if app.scroll > max_scroll {
        app.scroll = max_scroll;
    }
    let skip_bottom = app.scroll;
    let mut want = height + skip_bottom;
    let mut chunks: Vec<&[Line<'static>]> = Vec::new();
    for cell in app.cells.iter_mut().rev() {
        if want == 0 {
            break;
        }
        let lines = cell.lines(width, unfolded);
        let take = lines.len().min(want);
        chunks.push(&lines[lines.len() - take..]);
        want -= take;
    }
    let mut visible: Vec<Line<'static>> = chunks.into_iter().rev().flatten().cloned().collect();
    visible.truncate(visible.len().saturating_sub(skip_bottom));
    let start = visible.len().saturating_sub(height);
    let visible = visible.split_off(start);
    frame.render_widget(Paragraph::new(visible), Rect { width, ..area });
    if app.scroll > 0 {
        let tag = format!(" ↓ {} lines below ", app.scroll);
        let w = (tag.chars().count() as u16).min(area.width);
        let r = Rect::new(area.x + area.width - w, area.y + area.height - 1, w, 1);
        frame.render_widget(
            Paragraph::new(Span::styled(tag, Style::new().fg(Color::Black).bg(Color::Yellow))),
            r,
        );
    }
}

fn status_style(status: &str) -> (char, Color) {
    match status {
        "ready" => ('●', Color::Green),
        "starting" => ('◌', Color::Yellow),
        "failed" => ('✗', Color::Red),
        "exited" => ('✗', Color::Red),
        _ => ('○', Color::DarkGray),
    }
}

/// M12: `MCP ready/total`, then each server with its state and tools, live.
fn draw_sidebar(frame: &mut Frame, app: &App, area: Rect) {
    let (ready, total) = app.mcp_ready();
    let mut lines = vec![Line::from(vec![
        Span::styled("MCP ", Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(format!("{ready}/{total}")),
    ])];
    if app.mcp.is_empty() {
        lines.push(Line::styled("no servers", dim()));
    }
    let inner = area.width.saturating_sub(3) as usize;
    for s in &app.mcp {
        let (mark, color) = status_style(&s.status);
        let tail = match s.status.as_str() {
            "ready" => format!("{} tools", s.tools),
            other => other.to_string(),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} "), Style::new().fg(color)),
            Span::raw(sanitize::one_line(&s.name, inner.saturating_sub(tail.len() + 1).max(4))),
            Span::styled(format!(" {tail}"), dim()),
        ]));
    }
    let block = Block::default().borders(Borders::LEFT).border_style(dim());
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The approval or question prompt above the input, if any.
fn prompt_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let width = width.saturating_sub(2).max(1);
    let mut lines = Vec::new();
    if let Some(p) = app.approvals.front() {
        let who = p
            .subagent
            .as_ref()
            .map(|(n, role)| format!("sub-agent {n} ({}) asks: ", sanitize::one_line(role, 30)))
            .unwrap_or_default();
        lines.push(Line::from(vec![
            Span::styled(
                format!("{who}Allow "),
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                sanitize::one_line(&p.tool, 60),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::styled(format!("  {} · {}", p.perm, sanitize::one_line(&p.source, 40)), dim()),
        ]));
        let args = serde_json::to_string(&p.args).unwrap_or_default();
        lines.push(Line::from(Span::raw(sanitize::one_line(&args, 400))));
        if !p.reason.is_empty() {
            lines.push(Line::styled(sanitize::one_line(&p.reason, 400), dim()));
        }
        let keys = if app.mode == InputMode::RefuseReason {
            "reason for the model (Enter sends; empty: none)".to_string()
        } else {
            let more = app.approvals.len().saturating_sub(1);
            let queue = if more > 0 {
                format!("  ({more} more waiting)")
            } else {
                String::new()
            };
            format!("[y] yes once  [a] always this session  [n] no{queue}")
        };
        lines.push(Line::styled(keys, Style::new().fg(Color::Cyan)));
    } else if let Some(q) = app.questions.front() {
        let who = q
            .subagent
            .as_ref()
            .map(|(n, role)| format!("sub-agent {n} ({}) asks: ", sanitize::one_line(role, 30)))
            .unwrap_or_default();
        let text = Line::from(vec![
            Span::styled(
                format!("? {who}"),
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ),
            Span::raw(sanitize::clean(&q.question).replace('\n', " ")),
        ]);
        lines.extend(wrap::wrap_line(&text, width).into_iter().take(6));
        lines.push(Line::styled(
            "type the answer; Enter sends (empty: decline)",
            Style::new().fg(Color::Cyan),
        ));
    }
    lines
}

fn draw_bottom(frame: &mut Frame, app: &mut App, area: Rect, prompt: Vec<Line<'static>>) {
    if area.height == 0 {
        return;
    }
    let prompt_rows = (prompt.len() as u16).min(area.height.saturating_sub(1));
    let [p_area, i_area] = Layout::vertical([Constraint::Length(prompt_rows), Constraint::Min(1)]).areas(area);
    if prompt_rows > 0 {
        frame.render_widget(Paragraph::new(prompt), p_area);
    }
    let title = match app.mode {
        InputMode::RefuseReason => " reason ",
        InputMode::Answer => " answer ",
        InputMode::Chat if app.questions.front().is_some() && app.approvals.is_empty() => " answer ",
        InputMode::Chat => "",
    };
    let tall = frame.area().height >= INPUT_RULES_FROM_HEIGHT && i_area.height >= 3;
    let borders = if tall {
        Borders::TOP | Borders::BOTTOM
    } else {
        Borders::NONE
    };
    // A title takes a row of its own when there are no borders: none then.
    let mut block = Block::default().borders(borders).border_style(dim());
    if tall && !title.is_empty() {
        block = block.title(title);
    }
    app.input.set_block(block);
    frame.render_widget(&app.input, i_area);
}

fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let mut spans = Vec::new();
    if let Some(started) = app.running {
        let tick = app.tick % SPINNER.len();
        let what = if app.cancelling {
            "cancelling"
        } else if app.thinking {
            "thinking"
        } else {
            "working"
        };
        spans.push(Span::styled(
            format!(
                "{} {what}{} · Esc cancels  ",
                SPINNER[tick],
                live_duration(started.elapsed())
            ),
            Style::new().fg(Color::Yellow),
        ));
    }
    if let Some(flash) = app.flash_text() {
        spans.push(Span::styled(format!("{flash}  "), Style::new().fg(Color::Cyan)));
    }
    spans.push(Span::styled(sanitize::one_line(&app.model, 40), dim()));
    spans.push(Span::styled(format!(" · {}", app.approval_mode), dim()));
    if app.usage != Default::default() {
        spans.push(Span::styled(
            format!(
                " · tokens {} in / {} out",
                cells::short_count(app.usage.input_tokens),
                cells::short_count(app.usage.output_tokens)
            ),
            dim(),
        ));
    }
    if !app.mcp.is_empty() && area.width < SIDEBAR_FROM_WIDTH {
        let (ready, total) = app.mcp_ready();
        spans.push(Span::styled(format!(" · MCP {ready}/{total}"), dim()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_completions(frame: &mut Frame, app: &App, input_area: Rect) {
    let list = app.completion_list();
    if list.is_empty() || input_area.y == 0 {
        return;
    }
    let rows = (list.len() as u16).min(8).min(input_area.y);
    let width = input_area.width.min(80);
    let area = Rect::new(input_area.x, input_area.y - rows, width, rows);
    let selected = app.completion_index % list.len();
    let lines: Vec<Line> = list
        .iter()
        .enumerate()
        .take(rows as usize)
        .map(|(i, (usage, about))| {
            let style = if i == selected {
                Style::new().bg(Color::Blue).fg(Color::White)
            } else {
                Style::new().bg(Color::Black)
            };
            Line::from(vec![
                Span::styled(format!("{usage:<18}"), style.add_modifier(Modifier::BOLD)),
                Span::styled(format!(" {about}"), style),
            ])
        })
        .collect();
    frame.render_widget(Clear, area);
    frame.render_widget(Paragraph::new(lines), area);
}

fn draw_overlay(frame: &mut Frame, app: &App, area: Rect) {
    let Some(overlay) = &app.overlay else { return };
    let (title, lines): (String, Vec<Line>) = match overlay {
        Overlay::Help => ("help".into(), help_lines()),
        Overlay::Mcp => ("MCP servers".into(), mcp_lines(app)),
        Overlay::Agents { list, selected } => ("sub-agents of this session".into(), agents_lines(list, *selected)),
        Overlay::Agent(t, _) => (
            format!("sub-agent {} · {}", t.n, sanitize::one_line(&t.role, 30)),
            agent_lines(t, area.width.saturating_sub(4)),
        ),
    };
    let scroll = match overlay {
        Overlay::Agent(_, s) => *s,
        _ => 0,
    };
    let r = Rect::new(
        area.x + area.width / 20,
        area.y,
        area.width - area.width / 10,
        area.height,
    );
    let inner_w = r.width.saturating_sub(2).max(1);
    let wrapped = wrap::wrap_lines(&lines, inner_w);
    let scroll = scroll.min(wrapped.len().saturating_sub(1));
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" {title} · Esc closes "))
        .border_style(Style::new().fg(Color::Cyan));
    frame.render_widget(Clear, r);
    frame.render_widget(Paragraph::new(wrapped[scroll..].to_vec()).block(block), r);
}

fn help_lines() -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::styled("Keys", Style::new().add_modifier(Modifier::BOLD)),
        Line::from("Enter send · Alt-Enter or Ctrl-J new line · ↑/↓ history · Tab completes a command"),
        Line::from("Esc cancel the running turn · Ctrl-C twice (or Ctrl-D) quit · PgUp/PgDn scroll"),
        Line::from("Ctrl-O fold/unfold tool outputs · y/a/n answer an approval"),
        Line::default(),
        Line::styled("Commands", Style::new().add_modifier(Modifier::BOLD)),
    ];
    for c in slash::COMMANDS {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<18}", c.usage), Style::new().fg(Color::Cyan)),
            Span::raw(format!(" {}", c.about)),
        ]));
    }
    lines
}

/// `/mcp`: every server, its state and tools, where it came from, why it failed (M11).
pub fn mcp_lines(app: &App) -> Vec<Line<'static>> {
    let (ready, total) = app.mcp_ready();
    let mut lines = vec![Line::from(format!(
        "{ready} of {total} ready · /mcp reload [NAME] restarts"
    ))];
    if app.mcp.is_empty() {
        lines.push(Line::styled("no MCP servers configured (mcp.json, plugins)", dim()));
    }
    for s in &app.mcp {
        let (mark, color) = status_style(&s.status);
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} "), Style::new().fg(color)),
            Span::styled(
                sanitize::one_line(&s.name, 40),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::styled(format!("  {}", s.status), Style::new().fg(color)),
            Span::raw(format!("  {} tools", s.tools)),
            Span::styled(
                format!(
                    "  {} · {}",
                    sanitize::one_line(&s.origin, 30),
                    sanitize::one_line(&s.file.display().to_string(), 80)
                ),
                dim(),
            ),
        ]));
        if let Some(detail) = &s.detail {
            lines.push(Line::styled(
                format!("    {}", sanitize::one_line(detail, 300)),
                Style::new().fg(color),
            ));
        }
    }
    lines
}

fn agents_lines(list: &[cst_core::SubAgentTranscript], selected: usize) -> Vec<Line<'static>> {
    if list.is_empty() {
        return vec![Line::styled("no sub-agent has run in this session yet", dim())];
    }
    let mut lines = vec![Line::styled("↑/↓ choose · Enter shows one", dim())];
    for (i, t) in list.iter().enumerate() {
        let style = if i == selected {
            Style::new().bg(Color::Blue).fg(Color::White)
        } else {
            Style::new()
        };
        lines.push(Line::from(vec![Span::styled(
            format!(
                "{} {:>2}  {:<16} {:<10} {} tool calls  {}",
                if i == selected { "›" } else { " " },
                t.n,
                sanitize::one_line(&t.role, 16),
                t.end.as_deref().unwrap_or("running"),
                t.tool_calls.len(),
                sanitize::one_line(&t.description, 60),
            ),
            style,
        )]));
    }
    lines
}

/// A6: role, prompt, each tool call, and the report.
pub fn agent_lines(t: &cst_core::SubAgentTranscript, width: u16) -> Vec<Line<'static>> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut lines = vec![
        Line::from(vec![
            Span::styled("role ", dim()),
            Span::raw(sanitize::one_line(&t.role, 60)),
        ]),
        Line::from(vec![
            Span::styled("model ", dim()),
            Span::raw(sanitize::one_line(&t.model, 60)),
        ]),
        Line::from(vec![
            Span::styled("task ", dim()),
            Span::raw(sanitize::one_line(&t.description, 200)),
        ]),
        Line::default(),
        Line::styled("Prompt", bold),
    ];
    lines.extend(sanitize::clean(&t.prompt).lines().map(|l| Line::from(l.to_string())));
    lines.push(Line::default());
    lines.push(Line::styled(format!("Tool calls ({})", t.tool_calls.len()), bold));
    for call in &t.tool_calls {
        let tool = call.get("tool").and_then(|v| v.as_str()).unwrap_or("?");
        let outcome = call.get("outcome").and_then(|v| v.as_str()).unwrap_or("?");
        let args = call.get("args").cloned().unwrap_or_default();
        let result = call.get("result").and_then(|v| v.as_str()).unwrap_or("");
        lines.push(Line::from(vec![
            Span::styled("● ", Style::new().fg(Color::Blue)),
            Span::styled(sanitize::one_line(tool, 40), bold),
            Span::raw(format!("  {}", cells::args_short(tool, &args, 80))),
            Span::styled(format!("  {outcome}"), dim()),
        ]));
        let first = result.lines().next().unwrap_or("");
        if !first.is_empty() {
            lines.push(Line::styled(
                format!("    ⎿ {}", sanitize::one_line(first, width.saturating_sub(8) as usize)),
                dim(),
            ));
        }
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        format!("Report ({})", t.end.as_deref().unwrap_or("running")),
        bold,
    ));
    match &t.report {
        Some(r) => lines.extend(sanitize::clean(r).lines().map(|l| Line::from(l.to_string()))),
        None => lines.push(Line::styled("(no report yet)", dim())),
    }
    lines
}
