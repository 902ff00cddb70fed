//! Bench section: the agent core's own overhead.
//!
//! - host time per tool round trip (model reply with one tool call → tool runs → result sent
//!   back) against the scripted server answering at once, with the tool's own time subtracted
//!   (target ≤ 2 ms). The figure includes loopback HTTP and the in-process scripted server, so
//!   it is an upper bound of the host's share.
//! - memory of a 200-turn session (RSS growth and peak, Linux).
//! - a turn whose tool call is `task` (sub-agent start, its model call, its transcript, the
//!   report) against a turn whose tool call is `read_file`.
//! - section `apis`: the same round trip on each wire API (Chat Completions, Responses,
//!   Messages), and the size of the first request with the default tools (target < 8 kB).
//!
//! `host/benches/tools.rs` calls [`run`].
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cst_agent::approvals::ApprovalMode;
use cst_agent::core::{self, Event, Op, SessionConfig, TurnEnd};
use cst_agent::discovery::ToolsProfile;
use cst_agent::model::{ModelClient, ModelConfig, WireApi};
use cst_agent::tools::Registry;
use cst_test_support::{call, Api, Reply, ScriptedServer};
use serde_json::json;

const TURNS: usize = 200;
const TASK_TURNS: usize = 50;

fn rss_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

struct Measured {
    wall: Duration,
    tool_time: Duration,
    model_calls: usize,
    tool_calls: usize,
    /// Bytes of the first request's body (only when bodies were recorded).
    first_request: usize,
}

/// A session of `turns` user turns; each turn is one tool call and a final answer. The tool call
/// is `read_file` of a tiny file, or with `task` a `task` call whose read-only sub-agent answers
/// at once (three model calls a turn).
async fn session(turns: usize, task: bool) -> Measured {
    session_on(Api::Chat, turns, task, false).await
}

/// `record`: keep request bodies (for their size), on a server of `api`.
async fn session_on(api: Api, turns: usize, task: bool, record: bool) -> Measured {
    let mut main = Vec::with_capacity(turns * 2);
    let mut conversations = Vec::new();
    for i in 0..turns {
        let c = if task {
            // `;` ends the key so `SUB-1;` does not also match `SUB-10;`.
            conversations.push((format!("SUB-{i};"), vec![Reply::text("report")]));
            call(
                &format!("c{i}"),
                "task",
                json!({"description": "bench", "prompt": format!("SUB-{i}; go"), "agent": "explore"}),
            )
        } else {
            call(&format!("c{i}"), "read_file", json!({"path": "a.txt"}))
        };
        main.push(Reply::calls(vec![c]));
        main.push(Reply::text("ok"));
    }
    let server = if record {
        ScriptedServer::start_api(api, main)
    } else if task {
        let mut all = vec![("MAIN".to_string(), main)];
        all.extend(conversations);
        ScriptedServer::start_conversations(all.iter().map(|(k, r)| (k.as_str(), r.clone())).collect())
    } else {
        ScriptedServer::start_with(main, false)
    };
    let ws = tempfile::tempdir().expect("tempdir");
    std::fs::write(ws.path().join("a.txt"), "tiny\n").expect("write");
    let registry = Arc::new(Registry::new());
    cst_agent::builtin_tools::register_builtins(&registry, ToolsProfile::Default, &mut Vec::new());
    let model = ModelClient::new(ModelConfig {
        base_url: server.url(),
        name: "bench".into(),
        api_key_env: "NONE".into(),
        api_key: None,
        api: match api {
            Api::Chat => WireApi::Chat,
            Api::Responses => WireApi::Responses,
            Api::Messages => WireApi::Messages,
        },
        ..ModelConfig::default()
    })
    .expect("client");
    let mut config = SessionConfig::new(std::fs::canonicalize(ws.path()).expect("canon"), registry, model);
    config.approval = ApprovalMode::Auto;
    config.headless = true;
    config.max_steps = 4;
    config.system_prompt = "bench".into();
    let mut s = core::spawn(config);
    let start = Instant::now();
    let mut tool_time = Duration::ZERO;
    let mut tool_calls = 0;
    for i in 0..turns {
        let _ = s.ops.send(Op::UserTurn {
            text: format!("MAIN turn {i}"),
        });
        while let Some(ev) = s.events.recv().await {
            match ev {
                Event::ToolCallFinished { duration, .. } => {
                    tool_time += duration;
                    tool_calls += 1;
                }
                Event::TurnFinished { end, .. } => {
                    assert!(matches!(end, TurnEnd::Done { .. }), "turn {i} ended {end:?}");
                    break;
                }
                _ => {}
            }
        }
    }
    let wall = start.elapsed();
    let _ = s.ops.send(Op::Shutdown);
    while let Some(ev) = s.events.recv().await {
        if matches!(ev, Event::SessionClosed) {
            break;
        }
    }
    let model_calls = server.request_count();
    let first_request = server.requests().first().map_or(0, |r| r.body.to_string().len());
    server.finish();
    Measured {
        wall,
        tool_time,
        model_calls,
        tool_calls,
        first_request,
    }
}

/// Section `apis`: host time per round trip and the first request's size on each wire API.
pub fn run_apis() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("\n## model wire APIs (scripted servers on loopback, 50-turn sessions)\n");
    println!("| API | host time per model round trip | first request (the built-in tools) | targets |");
    println!("|---|---|---|---|");
    for (api, name) in [
        (Api::Chat, "Chat Completions"),
        (Api::Responses, "Responses"),
        (Api::Messages, "Anthropic Messages"),
    ] {
        rt.block_on(session_on(api, 5, false, true));
        let m = rt.block_on(session_on(api, 50, false, true));
        let per = m.wall.saturating_sub(m.tool_time).as_secs_f64() * 1000.0 / m.model_calls.max(1) as f64;
        println!(
            "| {name} | {per:.3} ms ({} calls) | {:.1} kB | ≤ 2 ms, < 8 kB |",
            m.model_calls,
            m.first_request as f64 / 1000.0
        );
    }
}

pub fn run() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Warm up (connection pool, page cache, lazy statics); a short session shows the cost with a
    // small history (each request carries the whole conversation, so later calls cost more).
    rt.block_on(session(5, false));
    let short = rt.block_on(session(20, false));
    let rss_before = rss_kib("VmRSS:");
    let m = rt.block_on(session(TURNS, false));
    let rss_after = rss_kib("VmRSS:");
    let hwm = rss_kib("VmHWM:");

    let host = m.wall.saturating_sub(m.tool_time);
    let per_round_trip = host / m.model_calls.max(1) as u32;
    println!("\n## core (agent loop, scripted model server on loopback)\n");
    println!("| measure | value | target |");
    println!("|---|---|---|");
    println!(
        "| host time per model round trip, tool time excluded ({} model calls, {} tool calls) | {:.3} ms | ≤ 2 ms |",
        m.model_calls,
        m.tool_calls,
        per_round_trip.as_secs_f64() * 1000.0
    );
    println!(
        "| same, 20-turn session ({} model calls) | {:.3} ms | ≤ 2 ms |",
        short.model_calls,
        short.wall.saturating_sub(short.tool_time).as_secs_f64() * 1000.0 / short.model_calls.max(1) as f64
    );
    println!(
        "| tool time (read_file) per call | {:.3} ms | — |",
        m.tool_time.as_secs_f64() * 1000.0 / m.tool_calls.max(1) as f64
    );
    // Same number of turns with and without a sub-agent: the difference is what a `task` costs.
    let plain = rt.block_on(session(TASK_TURNS, false));
    let tasks = rt.block_on(session(TASK_TURNS, true));
    let per_turn = |m: &Measured| m.wall.as_secs_f64() * 1000.0 / TASK_TURNS as f64;
    println!(
        "| turn with a `read_file` call ({TASK_TURNS} turns, {} model calls) | {:.3} ms | — |",
        plain.model_calls,
        per_turn(&plain)
    );
    println!(
        "| turn with a `task` call: sub-agent, its model call, sub-N.jsonl ({TASK_TURNS} turns, {} model calls) | {:.3} ms | — |",
        tasks.model_calls,
        per_turn(&tasks)
    );
    match (rss_before, rss_after, hwm) {
        (Some(b), Some(a), Some(h)) => {
            println!(
                "| RSS growth over a {TURNS}-turn session | {:.1} MiB | — |",
                a.saturating_sub(b) as f64 / 1024.0
            );
            println!("| peak RSS of the bench process | {:.1} MiB | — |", h as f64 / 1024.0);
        }
        _ => println!("| memory | n/a (no /proc) | — |"),
    }
}
