//! `cst-agent agents list|transcripts|show`: the sub-agent roles this workspace sees, and the
//! sub-agent transcripts of a session (the headless counterpart of the TUI's `/agents`, A6).

use clap::Subcommand;
use serde_json::{json, Value};

use super::{exit, Cli};
use cst_core::subagent_transcripts as transcripts;
use cst_core::{load_subagent_transcript, subagent_transcripts, SubAgentTranscript};

#[derive(Debug, Subcommand)]
pub enum AgentsCmd {
    /// Every sub-agent role: name, read-only, model, step limit, tools, file (built-ins have none).
    List {
        #[arg(long)]
        json: bool,
    },
    /// The sub-agent transcripts of a session (default: the latest session of the workspace).
    Transcripts {
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// One sub-agent's prompt, tool calls and report.
    Show {
        /// The sub-agent's number (N of `sub-N.jsonl`).
        n: u32,
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
}

pub fn run(cli: &Cli, cmd: &AgentsCmd) -> i32 {
    let workspace = cli.workspace_dir();
    match cmd {
        AgentsCmd::List { json } => {
            let loaded = cli.load();
            super::print_warnings(&loaded.warnings);
            let roles: Vec<Value> = loaded
                .roles
                .iter()
                .map(|r| {
                    json!({"name": r.name, "description": r.description, "readonly": r.readonly,
                           "model": r.model, "max_steps": r.max_steps, "tools": r.tools, "file": r.file})
                })
                .collect();
            if *json {
                println!("{}", serde_json::to_string_pretty(&roles).unwrap_or_default());
            } else {
                for r in loaded.roles.iter() {
                    println!(
                        "{:<20} {:<9} {}",
                        super::terminal_safe(&r.name),
                        if r.readonly { "read-only" } else { "" },
                        r.file
                            .as_ref()
                            .map(|f| super::terminal_safe(&f.display().to_string()))
                            .unwrap_or_else(|| "built-in".into())
                    );
                }
            }
            exit::OK
        }
        AgentsCmd::Transcripts { session, json } => {
            let Some(session) = session_or_latest(&workspace, session) else {
                return exit::FAILURE;
            };
            let list = subagent_transcripts(&workspace, &session);
            if *json {
                let v: Vec<Value> = list.iter().map(summary).collect();
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                eprintln!("session {session}: {} sub-agent(s)", list.len());
                for t in &list {
                    println!(
                        "sub-{:<3} {:<16} {:<10} {}",
                        t.n,
                        t.role,
                        t.end.as_deref().unwrap_or("running"),
                        t.description
                    );
                }
            }
            exit::OK
        }
        AgentsCmd::Show { n, session } => {
            let Some(session) = session_or_latest(&workspace, session) else {
                return exit::FAILURE;
            };
            let path = transcripts::session_dir(&workspace, &session).join(transcripts::file_name(*n));
            match load_subagent_transcript(&path) {
                Ok(t) => {
                    print_one(&t);
                    exit::OK
                }
                Err(e) => {
                    eprintln!("error: {}: {e}", path.display());
                    exit::FAILURE
                }
            }
        }
    }
}

/// The session named, else the latest one (reported when there is none). Session ids start
/// with the start time in seconds, so the greatest name is the latest.
fn session_or_latest(workspace: &std::path::Path, named: &Option<String>) -> Option<String> {
    if named.is_some() {
        return named.clone();
    }
    let dir = workspace.join(".agent").join("sessions");
    let latest = std::fs::read_dir(&dir)
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .max();
    if latest.is_none() {
        eprintln!("error: no sessions under {}", dir.display());
    }
    latest
}

fn summary(t: &SubAgentTranscript) -> Value {
    json!({"n": t.n, "path": t.path, "role": t.role, "description": t.description, "model": t.model,
           "parent_call_id": t.parent_call_id, "tool_calls": t.tool_calls.len(), "end": t.end})
}

fn print_one(t: &SubAgentTranscript) {
    println!(
        "sub-{} · role {} · model {} · {}",
        t.n,
        t.role,
        t.model,
        t.end.as_deref().unwrap_or("running")
    );
    println!("\n## Prompt\n{}", t.prompt);
    println!("\n## Tool calls ({})", t.tool_calls.len());
    for c in &t.tool_calls {
        println!(
            "- {} {} → {}",
            c["tool"].as_str().unwrap_or("?"),
            c["args"],
            c["outcome"].as_str().unwrap_or("?")
        );
    }
    println!("\n## Report\n{}", t.report.as_deref().unwrap_or("(none yet)"));
}
