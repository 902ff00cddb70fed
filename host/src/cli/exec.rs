//! `cst-agent exec "PROMPT"`: the headless runner, one client of the core.
//!
//! stderr: the summary line (E9) first, then warnings and progress. stdout: the final answer, or
//! with `--json` a JSONL event stream: [`cst_protocol::headless`], this runner's own contract
//! (see `docs/headless.md`), not the core's internal types.

use std::io::{IsTerminal, Read, Write};

use super::Cli;
use cst_core::approvals::ApprovalMode;
use cst_core::model::ModelClient;
use cst_core::{Event, Op, SessionBuilder, TurnEnd, DEFAULT_MAX_STEPS};
use cst_protocol::headless::HeadlessEvent;

/// Exit codes of `exec` (documented in docs/headless.md).
pub mod code {
    /// The model gave a final answer.
    pub const DONE: i32 = 0;
    /// The model call failed for good (HTTP error, 401, unreachable, malformed stream) or another error.
    pub const ERROR: i32 = 1;
    /// Bad command line, no prompt, or no/broken model configuration.
    pub const USAGE: i32 = 2;
    /// `--max-steps` was reached while the model still asked for tools.
    pub const MAX_STEPS: i32 = 3;
    /// The final answer was cut at the model's output limit (`finish_reason: length`).
    pub const TRUNCATED: i32 = 4;
    /// Cancelled by Ctrl-C (SIGINT) — 128 + 2, as shells report it.
    pub const CANCELLED: i32 = 130;
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 the model answered; 1 the model call or another step failed; \
2 bad command line, no prompt or no model configuration; 3 --max-steps reached; 4 the answer was cut \
at the model's output limit; 130 cancelled (Ctrl-C)."
)]
pub struct ExecArgs {
    /// The task. Read from stdin when absent or `-`; piped stdin is appended to a task given here.
    pub prompt: Option<String>,
    /// Print a JSONL event stream on stdout instead of the final answer.
    #[arg(long)]
    pub json: bool,
    /// Most model calls in the turn (exit code 3 when reached).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STEPS, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: u32,
    /// Approval mode: `ask` and `auto` refuse (and tell the model) any call that would ask;
    /// `full` runs everything.
    #[arg(long, value_enum, default_value_t = ApprovalMode::Auto)]
    pub approval: ApprovalMode,
    /// Approve a tool for this run without asking (repeatable; names, comma-separated lists or
    /// globs such as `mcp__github__*`).
    #[arg(long = "allow-tool", value_name = "NAME")]
    pub allow_tool: Vec<String>,
    /// Approve every tool of this MCP server for this run (repeatable).
    #[arg(long = "allow-server", value_name = "NAME")]
    pub allow_server: Vec<String>,
    /// Model name (overrides settings.json `model.name`).
    #[arg(long, env = "CST_MODEL")]
    pub model: Option<String>,
    /// Base URL of the model server, e.g. http://127.0.0.1:11434/v1 (overrides the provider's,
    /// OPENAI_BASE_URL and settings.json `model.base_url`).
    #[arg(long, value_name = "URL", env = "CST_BASE_URL")]
    pub base_url: Option<String>,
    #[command(flatten)]
    pub session: super::session_args::SessionArgs,
}

fn status_of(end: &TurnEnd) -> (&'static str, i32) {
    let code = match end {
        TurnEnd::Done { .. } => code::DONE,
        TurnEnd::MaxSteps { .. } => code::MAX_STEPS,
        TurnEnd::Cancelled => code::CANCELLED,
        TurnEnd::Failed { .. } => code::ERROR,
        TurnEnd::Truncated { .. } => code::TRUNCATED,
    };
    (end.as_str(), code)
}

/// Most bytes of stdin taken into the prompt.
const MAX_STDIN_BYTES: u64 = 8 << 20;

fn read_stdin() -> Result<String, String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_STDIN_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
    if bytes.len() as u64 > MAX_STDIN_BYTES {
        return Err(format!("stdin holds more than {} MiB", MAX_STDIN_BYTES >> 20));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn read_prompt(arg: &Option<String>) -> Result<String, String> {
    let text = match arg.as_deref() {
        // As `codex exec` and `claude -p` do: `git diff | cst-agent exec "review this"`.
        Some(p) if p != "-" && !std::io::stdin().is_terminal() => {
            let piped = read_stdin()?;
            if piped.trim().is_empty() {
                p.to_string()
            } else {
                format!("{p}\n\n{piped}")
            }
        }
        Some(p) if p != "-" => p.to_string(),
        _ => {
            if arg.is_none() && std::io::stdin().is_terminal() {
                return Err("no prompt: pass it as an argument or on stdin".into());
            }
            read_stdin()?
        }
    };
    if text.trim().is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(text)
}

pub async fn run(cli: &Cli, args: &ExecArgs) -> i32 {
    let prompt = match read_prompt(&args.prompt) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return code::USAGE;
        }
    };
    let workspace = cli.workspace_dir();
    if !workspace.is_dir() {
        eprintln!("error: workspace {} is not a folder", workspace.display());
        return code::USAGE;
    }
    let resumed = match args.session.resumed(&workspace) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return code::USAGE;
        }
    };
    let config = match args
        .session
        .model_config(args.model.clone(), args.base_url.clone(), resumed.as_ref())
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            return code::USAGE;
        }
    };
    let model = match ModelClient::new(config) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: cannot set up the HTTP client: {e:#}");
            return code::ERROR;
        }
    };

    let allowed = match cst_core::approvals::AllowList::new(&args.allow_tool, &args.allow_server) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return code::USAGE;
        }
    };
    // Headless: the build waits (up to 30 s) for MCP servers that are still starting (M7).
    // The deployment's hooks and profile; a file that broke since the start-up check stops here.
    let (hooks, profile) = match super::deployment::session_settings() {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("error: {e}");
            return code::USAGE;
        }
    };
    let mut builder = SessionBuilder::new(workspace, model);
    if let Some(r) = resumed {
        builder = builder.resume(r);
    }
    let session = builder
        .profile(cli.tools)
        .permission_profile(profile.chosen())
        .approval(args.approval)
        .headless(true)
        .max_steps(args.max_steps)
        .allow(allowed)
        .hooks(hooks)
        .mcp_notice(std::sync::Arc::new(super::mcp::print_waiting))
        .build()
        .await;
    eprintln!("{}", session.summary);
    super::print_warnings(&session.warnings);
    let mut session = session.handle;
    let _ = session.ops.send(Op::UserTurn { text: prompt });

    // Ctrl-C cancels the turn: tools are stopped, the transcript is closed, exit code 130.
    let ops = session.ops.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = ops.send(Op::Cancel);
            // A second Ctrl-C means "stop now", even if cleanup hangs.
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("interrupted again: exiting without waiting for cleanup");
                std::process::exit(code::CANCELLED);
            }
        }
    });

    let mut exit = code::ERROR;
    let mut thinking = false;
    let stdout = std::io::stdout();
    while let Some(ev) = session.events.recv().await {
        if args.json {
            // Events without a line (approvals, reloads…) print nothing; serializing a line does
            // not fail in practice, and one that did would be skipped.
            // Every secret the host knows is redacted from the line before it is printed.
            if let Some(line) = HeadlessEvent::from_event(&ev).and_then(|j| redacted_json_line(&j)) {
                let mut out = stdout.lock();
                // A closed stdout (consumer gone) is not worth failing the run for.
                let _ = writeln!(out, "{line}").and_then(|_| out.flush());
            }
        } else {
            // Thinking is not printed, only said once per model reply.
            match &ev {
                Event::ReasoningDelta { .. } if !thinking => {
                    thinking = true;
                    eprintln!("thinking…");
                }
                Event::Message { .. } => thinking = false,
                _ => {}
            }
            print_human(&ev);
        }
        match ev {
            Event::TurnFinished { end, usage, .. } => {
                exit = status_of(&end).1;
                if let (TurnEnd::Done { answer } | TurnEnd::Truncated { answer }, false) = (&end, args.json) {
                    println!("{}", super::redact(answer));
                }
                if let Some(u) = usage {
                    eprintln!("tokens: {} in · {} out", u.input_tokens, u.output_tokens);
                }
                if let TurnEnd::MaxSteps { limit } = end {
                    eprintln!("stopped: the step limit ({limit}) was reached");
                }
                let _ = session.ops.send(Op::Shutdown);
            }
            Event::SessionClosed => break,
            _ => {}
        }
    }
    ctrl_c.abort();
    exit
}

/// One JSONL line of the stream with every secret the host knows replaced (in each string of
/// the event, so a secret is found whatever JSON escaping its text would get).
fn redacted_json_line(event: &HeadlessEvent) -> Option<String> {
    let mut value = serde_json::to_value(event).ok()?;
    let known = cst_config::secrets::values();
    if !known.is_empty() {
        redact_strings(&mut value, &known);
    }
    serde_json::to_string(&value).ok()
}

fn redact_strings(v: &mut serde_json::Value, known: &[String]) {
    use serde_json::Value;
    match v {
        Value::String(s) => *s = cst_config::secrets::redact_with(s, known),
        Value::Array(a) => a.iter_mut().for_each(|x| redact_strings(x, known)),
        Value::Object(o) => {
            let old = std::mem::take(o);
            for (k, mut x) in old {
                redact_strings(&mut x, known);
                o.insert(cst_config::secrets::redact_with(&k, known), x);
            }
        }
        _ => {}
    }
}

fn print_human(ev: &Event) {
    print_human_prefixed(ev, "");
}

fn print_human_prefixed(ev: &Event, prefix: &str) {
    match ev {
        Event::Warning { message } => eprintln!("warning: {prefix}{}", super::redact(message)),
        Event::Error { message } => eprintln!("error: {prefix}{}", super::redact(message)),
        Event::ToolCallStarted { tool, args, .. } => {
            // Argument names that look like credentials are masked on the terminal too.
            let mut a = cst_core::transcript::Redactor::default().value(args).to_string();
            if a.len() > 160 {
                let mut cut = 160;
                while !a.is_char_boundary(cut) {
                    cut -= 1;
                }
                a.truncate(cut);
                a.push('…');
            }
            eprintln!("{prefix}tool {tool} {}", super::redact(&a));
        }
        Event::ToolCallFinished {
            tool,
            outcome,
            duration,
            ..
        } => eprintln!(
            "{prefix}tool {tool}: {} ({} ms)",
            outcome.as_str(),
            duration.as_millis()
        ),
        Event::SubAgentStarted {
            n, role, description, ..
        } => eprintln!("task sub-{n} ({role}): {description}"),
        Event::SubAgent { n, event } => print_human_prefixed(event, &format!("[sub-{n}] ")),
        Event::Compacted {
            messages,
            tokens_before,
            tokens_after,
            ..
        } => eprintln!(
            "{prefix}context compacted: {messages} older messages summarised (about {tokens_before} → {tokens_after} tokens)"
        ),
        Event::SubAgentFinished { n, end, steps, .. } => {
            eprintln!("task sub-{n}: {} after {steps} model calls", status_of(end).0)
        }
        _ => {}
    }
}
