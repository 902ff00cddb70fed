//! The TUI's state and what events and keys do to it. No terminal here: [`App::on_event`] takes
//! the session's events, [`App::on_key`] a key and returns the ops to send, and the views in
//! [`crate::view`] draw the state. Tests drive it directly.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui_textarea::TextArea;
use serde_json::Value;

use crate::cells::{self, Cell, CellKind, Level, ToolCell};
use crate::sanitize;
use crate::slash::{self, Slash};
use cst_core::SubAgentTranscript;
use cst_protocol::{ApprovalDecision, Event, McpServerState, Op, Perm, TokenUsage, TurnEnd};

/// What the front end is told at start, besides the events.
pub struct Startup {
    pub workspace: PathBuf,
    pub model: String,
    pub approval: String,
    /// What the sandbox enforces on this machine.
    pub sandbox: String,
    pub summary: String,
    pub untrusted_hint: Option<String>,
    pub warnings: Vec<String>,
    /// Completion names: `skill:NAME`, `command:NAME`.
    pub completions: Vec<String>,
    /// Every secret the host knows replaced (the binary owns that list); shown text passes it.
    pub redact: fn(&str) -> String,
}

/// Trust or untrust the workspace (the binary owns the config crate): the message to show.
pub type TrustFn = Box<dyn Fn(bool) -> Result<String, String> + Send>;

pub struct ApprovalPrompt {
    pub request_id: u64,
    pub tool: String,
    pub perm: Perm,
    pub source: String,
    pub args: Value,
    pub reason: String,
    pub subagent: Option<(u32, String)>,
}

pub struct QuestionPrompt {
    pub request_id: u64,
    pub question: String,
    pub subagent: Option<(u32, String)>,
}

pub enum Overlay {
    Help,
    Mcp,
    Agents {
        list: Vec<SubAgentTranscript>,
        selected: usize,
    },
    Agent(Box<SubAgentTranscript>, usize),
}

/// The input box's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    Chat,
    /// Typing the reason of a refusal (`n` on an approval prompt).
    RefuseReason,
    /// Answering a question.
    Answer,
}

pub struct App {
    pub cells: Vec<Cell>,
    /// The assistant cell receiving deltas.
    streaming: Option<usize>,
    pub thinking: bool,
    pub running: Option<Instant>,
    pub cancelling: bool,
    pub approvals: VecDeque<ApprovalPrompt>,
    pub questions: VecDeque<QuestionPrompt>,
    pub overlay: Option<Overlay>,
    pub input: TextArea<'static>,
    pub mode: InputMode,
    history: Vec<String>,
    history_pos: Option<usize>,
    pub mcp: Vec<McpServerState>,
    pub usage: TokenUsage,
    pub model: String,
    pub approval_mode: String,
    pub sandbox: String,
    pub workspace: PathBuf,
    pub session_id: String,
    /// Lines scrolled up from the bottom (0: follow the newest).
    pub scroll: usize,
    pub unfolded: bool,
    pub completions: Vec<String>,
    pub completion_index: usize,
    /// Tool name → the source of its latest call (approval prompts name it).
    sources: HashMap<String, String>,
    /// Sub-agent n → role.
    roles: HashMap<u32, String>,
    ctrl_c_at: Option<Instant>,
    /// A short message in the status bar.
    pub flash: Option<(String, Instant)>,
    pub quit: bool,
    pub closed: bool,
    /// Frames of the spinner (advanced by the event loop's tick).
    pub tick: usize,
    trust: Option<TrustFn>,
    redact: fn(&str) -> String,
}

/// How long the status bar shows a message, and how close two Ctrl-C must be to quit.
const FLASH_FOR: Duration = Duration::from_secs(3);

impl App {
    pub fn new(startup: Startup, trust: Option<TrustFn>) -> Self {
        let mut app = App {
            cells: Vec::new(),
            streaming: None,
            thinking: false,
            running: None,
            cancelling: false,
            approvals: VecDeque::new(),
            questions: VecDeque::new(),
            overlay: None,
            input: new_input(),
            mode: InputMode::Chat,
            history: Vec::new(),
            history_pos: None,
            mcp: Vec::new(),
            usage: TokenUsage::default(),
            model: startup.model.clone(),
            approval_mode: startup.approval.clone(),
            sandbox: startup.sandbox.clone(),
            workspace: startup.workspace.clone(),
            session_id: String::new(),
            scroll: 0,
            unfolded: false,
            completions: startup.completions.clone(),
            completion_index: 0,
            sources: HashMap::new(),
            roles: HashMap::new(),
            ctrl_c_at: None,
            flash: None,
            quit: false,
            closed: false,
            tick: 0,
            trust,
            redact: startup.redact,
        };
        app.push(CellKind::Home(home_lines(&startup)));
        app
    }

    fn push(&mut self, kind: CellKind) {
        self.cells.push(Cell::new(kind));
    }

    pub fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.push(CellKind::Notice(level, text.into()));
    }

    fn set_flash(&mut self, text: impl Into<String>) {
        self.flash = Some((text.into(), Instant::now()));
    }

    pub fn flash_text(&self) -> Option<&str> {
        self.flash
            .as_ref()
            .filter(|(_, at)| at.elapsed() < FLASH_FOR)
            .map(|(t, _)| t.as_str())
    }

    /// Cells shown so far of past conversations (resume): a user line or an answer.
    pub fn replay_message(&mut self, role: &str, text: &str) {
        match role {
            "user" => self.push(CellKind::User(text.to_string())),
            _ if !text.is_empty() => self.push(CellKind::Assistant(text.to_string())),
            _ => {}
        }
    }

    /// A finished tool call of a resumed conversation.
    pub fn replay_tool(
        &mut self,
        call_id: &str,
        tool: &str,
        source: &str,
        args: Value,
        output: &str,
        finished: (cst_protocol::Outcome, Duration),
    ) {
        let (output, output_lines) = cells::display_output(output);
        self.push(CellKind::Tool(Box::new(ToolCell {
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            source: cells::source_label(tool, source),
            args,
            started: Instant::now(),
            finished: Some(finished),
            output,
            output_lines,
            subagent: None,
            diff_cache: None,
        })));
    }

    fn role_of(&self, n: u32) -> String {
        self.roles.get(&n).cloned().unwrap_or_else(|| "sub-agent".into())
    }

    /// Apply one session event.
    pub fn on_event(&mut self, event: Event) {
        self.on_event_of(event, None);
    }

    fn on_event_of(&mut self, event: Event, sub: Option<u32>) {
        let event = self.redacted(event);
        match event {
            Event::SessionStarted { session_id, model, .. } => {
                self.session_id = session_id;
                self.model = model;
            }
            Event::TurnStarted => {
                self.running = Some(Instant::now());
                self.cancelling = false;
            }
            Event::MessageDelta { text } if sub.is_none() => {
                self.thinking = false;
                match self.streaming {
                    Some(i) if i < self.cells.len() => {
                        if let CellKind::Assistant(s) = &mut self.cells[i].kind {
                            s.push_str(&text);
                        }
                        self.cells[i].invalidate();
                    }
                    _ => {
                        self.push(CellKind::Assistant(text));
                        self.streaming = Some(self.cells.len() - 1);
                    }
                }
            }
            Event::ReasoningDelta { .. } if sub.is_none() => self.thinking = true,
            Event::Message { text, .. } if sub.is_none() => {
                self.thinking = false;
                // The whole text replaces what streamed (it is the redacted, complete one).
                match self.streaming.take() {
                    _ if text.is_empty() => {}
                    Some(i) if i < self.cells.len() => {
                        self.cells[i].kind = CellKind::Assistant(text);
                        self.cells[i].invalidate();
                    }
                    _ => self.push(CellKind::Assistant(text)),
                }
            }
            Event::ToolCallStarted {
                call_id,
                tool,
                source,
                args,
            } => {
                let label = cells::source_label(&tool, &source);
                self.sources.insert(tool.clone(), label.clone());
                self.push(CellKind::Tool(Box::new(ToolCell {
                    call_id,
                    tool,
                    source: label,
                    args,
                    started: Instant::now(),
                    finished: None,
                    output: String::new(),
                    output_lines: 0,
                    subagent: sub,
                    diff_cache: None,
                })));
            }
            Event::ToolCallFinished {
                call_id,
                outcome,
                output,
                duration,
                ..
            } => {
                let found = self.cells.iter_mut().rev().find(|c| {
                    matches!(&c.kind, CellKind::Tool(t) if t.call_id == call_id && t.subagent == sub && t.finished.is_none())
                });
                if let Some(cell) = found {
                    if let CellKind::Tool(t) = &mut cell.kind {
                        let (shown, lines) = cells::display_output(&output);
                        t.output = shown;
                        t.output_lines = lines;
                        t.finished = Some((outcome, duration));
                    }
                    cell.invalidate();
                }
            }
            Event::ApprovalRequested {
                request_id,
                tool,
                perm,
                args,
                reason,
                subagent,
            } => {
                let source = self.sources.get(&tool).cloned().unwrap_or_else(|| "unknown".into());
                let subagent = subagent.map(|n| (n, self.role_of(n)));
                self.approvals.push_back(ApprovalPrompt {
                    request_id,
                    tool,
                    perm,
                    source,
                    args,
                    reason,
                    subagent,
                });
            }
            Event::QuestionAsked {
                request_id,
                question,
                subagent,
            } => {
                let subagent = subagent.map(|n| (n, self.role_of(n)));
                self.questions.push_back(QuestionPrompt {
                    request_id,
                    question,
                    subagent,
                });
            }
            Event::Reloaded {
                what,
                summary,
                warnings,
            } => {
                self.notice(
                    Level::Info,
                    format!("reloaded {}: {}", what.as_str(), summary.describe()),
                );
                for w in warnings {
                    self.notice(Level::Warning, w.to_string());
                }
            }
            Event::Warning { message } => {
                let who = sub.map(|n| format!("sub-agent {n}: ")).unwrap_or_default();
                self.notice(Level::Warning, format!("{who}{message}"));
            }
            Event::Error { message } if sub.is_none() => self.notice(Level::Error, message),
            Event::TurnFinished { end, usage, .. } if sub.is_none() => {
                self.running = None;
                self.thinking = false;
                self.streaming = None;
                // Requests of the turn were withdrawn with it.
                self.approvals.clear();
                self.questions.clear();
                if self.mode != InputMode::Chat {
                    self.mode = InputMode::Chat;
                    self.input = new_input();
                }
                if let Some(u) = usage {
                    self.usage.add(u);
                }
                match end {
                    TurnEnd::Done { .. } => {}
                    TurnEnd::Cancelled => {
                        let stopped = self.stop_running_cells();
                        let what = if stopped == 0 {
                            "turn cancelled".to_string()
                        } else {
                            format!("turn cancelled; {stopped} running tool call(s) stopped")
                        };
                        self.notice(Level::Warning, what);
                    }
                    TurnEnd::MaxSteps { limit } => self.notice(
                        Level::Warning,
                        format!("stopped after {limit} model calls (the step limit)"),
                    ),
                    TurnEnd::Truncated { .. } => self.notice(
                        Level::Warning,
                        "the answer was cut at the model's output limit".to_string(),
                    ),
                    // The Error event said why.
                    TurnEnd::Failed { .. } => {}
                }
                self.cancelling = false;
            }
            Event::SubAgentStarted {
                n, role, description, ..
            } => {
                self.roles.insert(n, role.clone());
                self.push(CellKind::SubAgent {
                    n,
                    role,
                    description,
                    end: None,
                });
            }
            Event::SubAgent { n, event } => self.on_event_of(*event, Some(n)),
            Event::SubAgentFinished { n, end, .. } => {
                if let Some(cell) = self
                    .cells
                    .iter_mut()
                    .rev()
                    .find(|c| matches!(&c.kind, CellKind::SubAgent { n: m, .. } if *m == n))
                {
                    if let CellKind::SubAgent { end: e, .. } = &mut cell.kind {
                        *e = Some(end.as_str().to_string());
                    }
                    cell.invalidate();
                }
            }
            Event::McpServers { servers } => self.mcp = servers,
            Event::ModelChanged { model } => {
                self.notice(Level::Info, format!("model: {model} from the next turn"));
                self.model = model;
            }
            Event::ApprovalModeChanged { mode } => {
                self.notice(Level::Info, format!("approval mode: {mode}"));
                self.approval_mode = mode;
            }
            Event::Cleared => {
                // Keep the home block; the transcript keeps the rest.
                self.cells.truncate(1);
                self.streaming = None;
                self.scroll = 0;
                self.notice(Level::Info, "conversation cleared: the next message starts afresh");
            }
            Event::Compacted {
                messages,
                tokens_before,
                tokens_after,
                ..
            } => self.notice(
                Level::Info,
                format!(
                    "context compacted: {messages} older messages summarised (about {} → {} tokens)",
                    cells::short_count(tokens_before),
                    cells::short_count(tokens_after)
                ),
            ),
            Event::SessionClosed => self.closed = true,
            // A sub-agent's text and the main agent's own user message are not cells (the
            // user's line was shown when typed; /agents shows the sub-agents' work).
            Event::UserMessage { .. }
            | Event::MessageDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::Message { .. }
            | Event::Error { .. }
            | Event::TurnFinished { .. } => {}
        }
    }

    /// Text the person sees passes the host's redaction (a tool may print an API key).
    fn redacted(&self, event: Event) -> Event {
        let r = self.redact;
        match event {
            Event::MessageDelta { text } => Event::MessageDelta { text: r(&text) },
            Event::Message { text, tool_calls } => Event::Message {
                text: r(&text),
                tool_calls,
            },
            Event::ToolCallFinished {
                call_id,
                tool,
                outcome,
                output,
                duration,
            } => Event::ToolCallFinished {
                call_id,
                tool,
                outcome,
                output: r(&output),
                duration,
            },
            Event::Warning { message } => Event::Warning { message: r(&message) },
            Event::Error { message } => Event::Error { message: r(&message) },
            other => other,
        }
    }

    /// Mark running tool cells cancelled (their finish events may not come); how many.
    fn stop_running_cells(&mut self) -> usize {
        let mut n = 0;
        for cell in &mut self.cells {
            if let CellKind::Tool(t) = &mut cell.kind {
                if t.finished.is_none() {
                    t.finished = Some((cst_protocol::Outcome::Cancelled, t.started.elapsed()));
                    n += 1;
                    cell.invalidate();
                }
            }
        }
        n
    }

    /// Matching slash commands for the input as typed.
    pub fn completion_list(&self) -> Vec<(String, &str)> {
        if self.mode != InputMode::Chat || self.input.lines().len() != 1 {
            return Vec::new();
        }
        slash::complete(&self.input.lines()[0], &self.completions)
    }

    /// Apply a key; the ops to send to the session.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Op> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        // Ctrl-C: clear the input, cancel the turn; twice quits.
        if ctrl && key.code == KeyCode::Char('c') {
            if self.ctrl_c_at.is_some_and(|t| t.elapsed() < FLASH_FOR) {
                self.quit = true;
                return vec![Op::Shutdown];
            }
            self.ctrl_c_at = Some(Instant::now());
            self.input = new_input();
            self.mode = InputMode::Chat;
            self.set_flash("press Ctrl-C again to quit");
            return self.cancel_turn();
        }
        if ctrl && key.code == KeyCode::Char('d') && self.input.is_empty() {
            self.quit = true;
            return vec![Op::Shutdown];
        }
        if ctrl && key.code == KeyCode::Char('o') {
            self.unfolded = !self.unfolded;
            return Vec::new();
        }
        match key.code {
            KeyCode::PageUp => {
                self.scroll = self.scroll.saturating_add(10);
                return Vec::new();
            }
            KeyCode::PageDown => {
                self.scroll = self.scroll.saturating_sub(10);
                return Vec::new();
            }
            _ => {}
        }
        if self.overlay.is_some() {
            self.overlay_key(key);
            return Vec::new();
        }
        if let Some(ops) = self.approval_key(key) {
            return ops;
        }
        // Esc cancels the running turn (M10); with nothing running it clears the input.
        if key.code == KeyCode::Esc {
            if self.running.is_some() {
                return self.cancel_turn();
            }
            if self.mode == InputMode::RefuseReason {
                self.mode = InputMode::Chat;
            }
            self.input = new_input();
            return Vec::new();
        }
        let newline = key.code == KeyCode::Enter && key.modifiers.intersects(KeyModifiers::ALT | KeyModifiers::SHIFT)
            || ctrl && key.code == KeyCode::Char('j');
        if newline {
            self.input.insert_newline();
            return Vec::new();
        }
        match key.code {
            KeyCode::Enter => return self.submit(),
            KeyCode::Tab => {
                let list = self.completion_list();
                if let Some((text, _)) = list.get(self.completion_index % list.len().max(1)) {
                    let text = text.clone();
                    self.input = new_input();
                    self.input.insert_str(&text);
                    self.completion_index = 0;
                }
                return Vec::new();
            }
            KeyCode::Up if self.input.cursor().0 == 0 && !self.completion_list().is_empty() => {
                self.completion_index = self.completion_index.saturating_sub(1);
                return Vec::new();
            }
            KeyCode::Down if !self.completion_list().is_empty() => {
                self.completion_index += 1;
                return Vec::new();
            }
            KeyCode::Up if self.input.cursor().0 == 0 && self.mode == InputMode::Chat => {
                self.history_prev();
                return Vec::new();
            }
            KeyCode::Down if self.input.cursor().0 + 1 >= self.input.lines().len() && self.history_pos.is_some() => {
                self.history_next();
                return Vec::new();
            }
            _ => {}
        }
        self.input.input(key);
        self.completion_index = 0;
        Vec::new()
    }

    /// A paste goes into the input as it is (newlines included), never submitted.
    pub fn on_paste(&mut self, text: &str) {
        if self.overlay.is_some() || (self.approvals.front().is_some() && self.mode == InputMode::Chat) {
            return;
        }
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.input.insert_str(&text);
    }

    fn cancel_turn(&mut self) -> Vec<Op> {
        if self.running.is_none() || self.cancelling {
            return Vec::new();
        }
        self.cancelling = true;
        self.set_flash("cancelling the turn…");
        vec![Op::Cancel]
    }

    /// Keys of the approval prompt at the front of the queue; `None` when it does not take
    /// the key.
    fn approval_key(&mut self, key: KeyEvent) -> Option<Vec<Op>> {
        let front = self.approvals.front()?;
        let id = front.request_id;
        if self.mode == InputMode::RefuseReason {
            if key.code == KeyCode::Enter {
                let reason = self.input.lines().join("\n").trim().to_string();
                self.input = new_input();
                self.mode = InputMode::Chat;
                let prompt = self.approvals.pop_front()?;
                self.note_decision(&prompt, "refused");
                return Some(vec![if reason.is_empty() {
                    Op::Approval {
                        request_id: id,
                        decision: ApprovalDecision::No,
                    }
                } else {
                    Op::Refuse { request_id: id, reason }
                }]);
            }
            return None;
        }
        let decision = match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => ApprovalDecision::Yes,
            KeyCode::Char('a') | KeyCode::Char('A') => ApprovalDecision::Always,
            KeyCode::Char('n') | KeyCode::Char('N') => {
                self.mode = InputMode::RefuseReason;
                self.input = new_input();
                return Some(Vec::new());
            }
            KeyCode::Esc => return None,
            // Other keys do nothing while a call waits: a stray `Enter` must not approve.
            _ => return Some(Vec::new()),
        };
        let prompt = self.approvals.pop_front()?;
        let word = match decision {
            ApprovalDecision::Yes => "approved once",
            ApprovalDecision::Always => "approved for this session",
            ApprovalDecision::No => "refused",
        };
        self.note_decision(&prompt, word);
        Some(vec![Op::Approval {
            request_id: id,
            decision,
        }])
    }

    fn note_decision(&mut self, prompt: &ApprovalPrompt, word: &str) {
        let who = prompt
            .subagent
            .as_ref()
            .map(|(n, role)| format!(" (sub-agent {n} {role})"))
            .unwrap_or_default();
        self.notice(Level::Info, format!("{} {word}{who}", prompt.tool));
    }

    fn overlay_key(&mut self, key: KeyEvent) {
        let Some(overlay) = self.overlay.as_mut() else { return };
        match (overlay, key.code) {
            (_, KeyCode::Esc | KeyCode::Char('q')) => {
                // From one transcript back to the list.
                if let Some(Overlay::Agent(..)) = self.overlay {
                    self.open_agents();
                } else {
                    self.overlay = None;
                }
            }
            (Overlay::Agents { list, selected }, KeyCode::Down) => {
                *selected = (*selected + 1).min(list.len().saturating_sub(1))
            }
            (Overlay::Agents { selected, .. }, KeyCode::Up) => *selected = selected.saturating_sub(1),
            (Overlay::Agents { list, selected }, KeyCode::Enter) => {
                if let Some(t) = list.get(*selected).cloned() {
                    // Read again: it may have grown since the list was made.
                    let t = cst_core::load_subagent_transcript(&t.path).unwrap_or(t);
                    self.overlay = Some(Overlay::Agent(Box::new(t), 0));
                }
            }
            (Overlay::Agent(_, scroll), KeyCode::Down) => *scroll += 1,
            (Overlay::Agent(_, scroll), KeyCode::Up) => *scroll = scroll.saturating_sub(1),
            _ => {}
        }
    }

    fn open_agents(&mut self) {
        let list = cst_core::subagent_transcripts(&self.workspace, &self.session_id);
        self.overlay = Some(Overlay::Agents { list, selected: 0 });
    }

    fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let pos = match self.history_pos {
            None => self.history.len() - 1,
            Some(p) => p.saturating_sub(1),
        };
        self.history_pos = Some(pos);
        self.input = new_input();
        self.input.insert_str(&self.history[pos]);
    }

    fn history_next(&mut self) {
        let Some(p) = self.history_pos else { return };
        self.input = new_input();
        if p + 1 < self.history.len() {
            self.history_pos = Some(p + 1);
            self.input.insert_str(&self.history[p + 1]);
        } else {
            self.history_pos = None;
        }
    }

    fn submit(&mut self) -> Vec<Op> {
        let text = self.input.lines().join("\n");
        if self.mode == InputMode::Answer || (self.questions.front().is_some() && self.approvals.is_empty()) {
            let Some(q) = self.questions.pop_front() else {
                self.mode = InputMode::Chat;
                return Vec::new();
            };
            self.input = new_input();
            self.mode = InputMode::Chat;
            let answer = (!text.trim().is_empty()).then(|| text.clone());
            self.notice(
                Level::Info,
                match &answer {
                    Some(a) => format!("answered: {a}"),
                    None => "declined to answer".into(),
                },
            );
            return vec![Op::Answer {
                request_id: q.request_id,
                answer,
            }];
        }
        if text.trim().is_empty() {
            return Vec::new();
        }
        self.input = new_input();
        self.history_pos = None;
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.scroll = 0;
        if text.trim_start().starts_with('/') {
            return self.slash(&text);
        }
        self.push(CellKind::User(text.clone()));
        vec![Op::UserTurn { text }]
    }

    fn slash(&mut self, text: &str) -> Vec<Op> {
        use cst_protocol::ReloadTarget;
        match slash::parse(text) {
            Slash::Help => self.overlay = Some(Overlay::Help),
            Slash::Mcp => self.overlay = Some(Overlay::Mcp),
            Slash::Agents => self.open_agents(),
            Slash::McpReload(server) => {
                return vec![Op::Reload {
                    what: ReloadTarget::Mcp { server },
                }]
            }
            Slash::SkillsReload => {
                return vec![Op::Reload {
                    what: ReloadTarget::Skills,
                }]
            }
            Slash::PluginsReload => {
                return vec![Op::Reload {
                    what: ReloadTarget::Plugins,
                }]
            }
            Slash::Trust => return self.set_trust(true),
            Slash::Untrust => return self.set_trust(false),
            Slash::Model(None) => self.notice(Level::Info, format!("model: {} (/model NAME changes it)", self.model)),
            Slash::Model(Some(model)) => return vec![Op::SetModel { model }],
            Slash::Approval(None) => self.notice(
                Level::Info,
                format!(
                    "approval mode: {} (/approval ask|auto|full changes it)",
                    self.approval_mode
                ),
            ),
            Slash::Approval(Some(mode)) => return vec![Op::SetApproval { mode }],
            Slash::Clear => return vec![Op::Clear],
            Slash::Quit => {
                self.quit = true;
                return vec![Op::Shutdown];
            }
            Slash::Turn(text) => {
                self.push(CellKind::User(text.clone()));
                return vec![Op::UserTurn { text }];
            }
            Slash::Unknown(message) => self.notice(Level::Error, message),
        }
        Vec::new()
    }

    /// T2: the binary records (or revokes) the trust, then the session loads (or unloads) the
    /// workspace's plugins and servers.
    fn set_trust(&mut self, trusted: bool) -> Vec<Op> {
        let result = match &self.trust {
            Some(f) => f(trusted),
            None => Err("trust cannot be changed in this session".into()),
        };
        match result {
            Ok(message) => {
                self.notice(Level::Info, message);
                vec![Op::Reload {
                    what: cst_protocol::ReloadTarget::Trust,
                }]
            }
            Err(e) => {
                self.notice(Level::Error, e);
                Vec::new()
            }
        }
    }

    /// Servers ready / all that are not disabled.
    pub fn mcp_ready(&self) -> (usize, usize) {
        let total = self.mcp.iter().filter(|s| s.status != "disabled").count();
        let ready = self.mcp.iter().filter(|s| s.status == "ready").count();
        (ready, total)
    }
}

fn new_input() -> TextArea<'static> {
    let mut t = TextArea::default();
    t.set_cursor_line_style(Style::default());
    t.set_placeholder_text("Message, or / for commands (Enter sends, Alt-Enter a new line)");
    t
}

/// E9's home block: summary, trust hint, warnings, model, approval mode, sandbox.
fn home_lines(s: &Startup) -> Vec<Line<'static>> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let dim = Style::new().fg(Color::DarkGray);
    let mut lines = vec![
        Line::from(vec![
            Span::styled("cst-agent", bold.fg(Color::Cyan)),
            Span::styled(
                format!("  {}", sanitize::one_line(&s.workspace.display().to_string(), 200)),
                dim,
            ),
        ]),
        Line::from(Span::styled(sanitize::one_line(&s.summary, 400), bold)),
        Line::from(vec![
            Span::styled("model ", dim),
            Span::raw(sanitize::one_line(&s.model, 80)),
            Span::styled(" · approval ", dim),
            Span::raw(s.approval.clone()),
            Span::styled(" · sandbox ", dim),
            Span::raw(sanitize::one_line(&s.sandbox, 200)),
        ]),
    ];
    if let Some(hint) = &s.untrusted_hint {
        lines.push(Line::from(vec![
            Span::styled("⚠ ", Style::new().fg(Color::Yellow)),
            Span::styled(sanitize::one_line(hint, 400), Style::new().fg(Color::Yellow)),
            Span::styled("  /plugins trust loads them", dim),
        ]));
    }
    for w in &s.warnings {
        lines.push(Line::from(vec![
            Span::styled("⚠ ", Style::new().fg(Color::Yellow)),
            Span::raw(sanitize::one_line(w, 400)),
        ]));
    }
    lines.push(Line::styled(
        "/help lists keys and commands · Esc cancels a turn · Ctrl-C twice quits",
        dim,
    ));
    lines
}
