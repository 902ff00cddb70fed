//! How `ask_user` reaches a person: the session implements [`Questions`] and hands it to each call
//! through [`ToolContext`](crate::ToolContext). Without it (a headless run, `tools call`) nobody
//! can answer and the tool says so.

use futures::future::BoxFuture;

/// Why a question got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    #[error("the user declined to answer")]
    Declined,
    #[error("the question was withdrawn (the turn was cancelled)")]
    Withdrawn,
    #[error("no front end is listening to answer questions")]
    NoListener,
}

/// Asks a person a question and waits for the answer.
pub trait Questions: Send + Sync {
    fn ask<'a>(&'a self, question: &'a str) -> BoxFuture<'a, Result<String, Unanswered>>;
}
