//! Sessions longer than the context window (issue 16 item 3): tool results cut with head and
//! tail kept, and the older history compacted into a summary before a request would overflow.
//! The scripted server records every request; none may be larger than the window.

use cst_core::approvals::ApprovalMode;
use cst_core::model::{ModelClient, ModelConfig};
use cst_core::Event;
use cst_test_support::session::{close, finished, session_with, turn};
use cst_test_support::{call, Reply, ScriptedServer};
use serde_json::json;

const WINDOW: u64 = 4_000;

fn small_window_model(server: &ScriptedServer) -> ModelClient {
    ModelClient::new(ModelConfig {
        base_url: server.url(),
        name: "small".into(),
        api_key_env: "NONE".into(),
        context_window: Some(WINDOW),
        ..ModelConfig::default()
    })
    .expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_turn_session_never_sends_a_request_over_the_window() {
    let turns = 200;
    let mut main = Vec::new();
    for i in 0..turns {
        main.push(Reply::calls(vec![call(
            &format!("c{i}"),
            "read_file",
            json!({"path": "notes.txt"}),
        )]));
        main.push(Reply::text(&format!("Turn {i} done: the notes say the same.")));
    }
    let summaries =
        vec![Reply::text("Earlier: the user asked to read notes.txt many times; it holds lines of x."); turns];
    // The summary requests are their own conversation (their first user message asks for one).
    let server = ScriptedServer::start_conversations(vec![("Summarize this coding-agent", summaries), ("", main)]);
    let ws = tempfile::tempdir().expect("ws");
    let notes = ("line of notes ".repeat(5) + "\n").repeat(40);
    std::fs::write(ws.path().join("notes.txt"), &notes).expect("write");
    let mut h = session_with(&server, ws.path(), |c| {
        c.model = small_window_model(&server);
        c.approval = ApprovalMode::Auto;
    });
    let mut compactions = 0;
    for i in 0..turns {
        let events = turn(&mut h, &format!("read notes.txt again ({i})")).await;
        compactions += events.iter().filter(|e| matches!(e, Event::Compacted { .. })).count();
        let (end, ..) = finished(&events);
        assert!(matches!(end, cst_core::TurnEnd::Done { .. }), "turn {i}: {end:?}");
    }
    close(h).await;
    let requests = server.requests();
    let largest = requests
        .iter()
        .map(|r| r.body.to_string().len() as u64 / 4)
        .max()
        .unwrap_or(0);
    assert!(
        largest <= WINDOW,
        "a request of about {largest} tokens went to a {WINDOW}-token window"
    );
    assert!(compactions >= 5, "only {compactions} compactions in {turns} turns");
    // After a compaction the model sees the summary.
    assert!(requests.iter().any(|r| r.messages().iter().any(|m| m["content"]
        .as_str()
        .is_some_and(|c| c.starts_with(cst_protocol::COMPACTED_SUMMARY_PREFIX)))));
    println!(
        "{} requests, the largest about {largest} tokens, {compactions} compactions",
        requests.len()
    );
    // The scripted server checked every request's invariants (calls answered, roles in order).
    server.finish_allow_unused();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_tool_result_reaches_the_model_cut_with_head_and_tail() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("c1", "read_file", json!({"path": "big.txt"}))]),
        Reply::text("ok"),
    ]);
    let ws = tempfile::tempdir().expect("ws");
    let big = format!("FIRST LINE\n{}LAST LINE\n", "middle line\n".repeat(20_000));
    std::fs::write(ws.path().join("big.txt"), &big).expect("write");
    let mut h = session_with(&server, ws.path(), |c| c.model = small_window_model(&server));
    let events = turn(&mut h, "read big.txt").await;
    // The front end (and so the transcript) got the whole result…
    let shown = events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallFinished { output, .. } => Some(output.clone()),
            _ => None,
        })
        .expect("a tool call");
    assert!(shown.len() > 100_000);
    // …the model a cut one, head and tail kept.
    let sent = server.requests()[1].tool_result("c1").expect("the result was sent");
    assert!(sent.len() <= cst_core::context::result_budget(WINDOW), "{}", sent.len());
    assert!(sent.contains("FIRST LINE") && sent.contains("LAST LINE") && sent.contains("cut from the middle"));
    close(h).await;
    server.finish();
}
