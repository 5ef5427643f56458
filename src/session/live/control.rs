//! The control socket of a live session (`~/.crew/run/<pid>.sock`, 0600 in a 0700
//! directory): one request line in, one JSON line out, except `events`, which answers a
//! stream of lines. A request is a bare word (`snapshot`, `events`, `worktrees`) or a JSON
//! object naming it (`{"request":"answer","id":1,"answer":{"answer":"allow_once"}}`):
//!
//! - `snapshot`: what `crew ps` shows;
//! - `events`: the journal's lines so far, then each new one, until the session ends;
//! - `answer`: answers an open approval question (it goes to the approver);
//! - `worktrees`, `review`: the project's worktrees, and diff/merge/squash/discard one;
//! - `output`: the end of a background command's output.
//!
//! Anything else is answered with an error naming the requests there are.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinHandle;

use super::approvals::Approvals;
use super::board::Board;
use super::journal::Journal;
use super::registry::Entry;
use super::steer::{self, Confirmation};
use crate::approver::ApprovalAnswer;
use crate::worktree::review::Review;

/// How long either side waits for the other (a whole exchange, `events` aside).
const PATIENCE: Duration = Duration::from_secs(2);

/// How long a worktree review may take (a merge of a large branch).
pub(crate) const REVIEW_PATIENCE: Duration = Duration::from_secs(60);

/// The longest request line read (a denial's message for the model fits).
const MAX_REQUEST: u64 = 64 << 10;

/// The requests, as the socket reads them.
#[derive(Debug, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
enum Request {
    Snapshot,
    Events,
    Answer {
        id: u64,
        answer: ApprovalAnswer,
    },
    Worktrees,
    Review {
        id: String,
        action: Review,
        #[serde(default)]
        confirmation: Confirmation,
    },
    Output {
        task: String,
    },
}

const REQUESTS: &str = "snapshot, events, answer, worktrees, review, output";

/// What the socket answers from.
pub(crate) struct Served {
    /// The session's registration.
    pub entry: Entry,
    /// What each agent is doing.
    pub board: Arc<Board>,
    /// The lines `events` streams.
    pub journal: Arc<Journal>,
    /// The open approval questions.
    pub approvals: Arc<Approvals>,
}

/// Binds `path` (replacing a stale socket there) and answers requests until aborted.
pub(crate) fn serve(path: &Path, served: Served) -> std::io::Result<JoinHandle<()>> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let served = Arc::new(served);
    Ok(tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let served = served.clone();
            tokio::spawn(async move {
                let _ = answer(stream, &served).await;
            });
        }
    }))
}

/// A request line the socket cannot read; the answer names the requests there are.
#[derive(Debug, thiserror::Error)]
#[error("bad request `{line}`: {source}; the requests are: {}", REQUESTS)]
struct BadRequest {
    /// The line, trimmed.
    line: String,
    /// Why it does not parse.
    source: serde_json::Error,
}

fn parse(line: &str) -> Result<Request, BadRequest> {
    let line = line.trim();
    let parsed = if line.starts_with('{') {
        serde_json::from_str(line)
    } else {
        serde_json::from_value(json!({ "request": line }))
    };
    parsed.map_err(|source| BadRequest {
        line: line.to_string(),
        source,
    })
}

async fn answer(stream: UnixStream, served: &Served) -> std::io::Result<()> {
    let (read, write) = stream.into_split();
    let mut line = String::new();
    tokio::time::timeout(
        PATIENCE,
        BufReader::new(tokio::io::AsyncReadExt::take(read, MAX_REQUEST)).read_line(&mut line),
    )
    .await
    .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    let mut write = BufWriter::new(write);
    let reply = match parse(&line) {
        Ok(Request::Events) => return stream_events(write, &served.journal).await,
        Ok(request) => reply(request, served).await,
        Err(e) => json!({ "error": e.to_string() }),
    };
    // Snapshots, diffs and outputs may hold a secret as much as events do.
    let mut text = served.journal.mask(reply.to_string());
    text.push('\n');
    write.write_all(text.as_bytes()).await?;
    write.flush().await?;
    write.into_inner().shutdown().await
}

async fn reply(request: Request, served: &Served) -> Value {
    let project = served.entry.project.clone();
    let blocking = |f: Box<dyn FnOnce() -> Value + Send>| async move {
        tokio::task::spawn_blocking(f)
            .await
            .unwrap_or_else(|e| json!({ "error": format!("the request failed: {e}") }))
    };
    match request {
        Request::Snapshot => super::snapshot::snapshot(&served.entry, &served.board),
        Request::Answer { id, answer } => match served.approvals.answer(id, answer) {
            Ok(()) => json!({ "ok": true }),
            Err(e) => json!({ "error": e.to_string() }),
        },
        Request::Worktrees => blocking(Box::new(move || steer::worktrees(&project))).await,
        Request::Review {
            id,
            action,
            confirmation,
        } => {
            blocking(Box::new(move || {
                steer::review(&project, &id, action, confirmation)
            }))
            .await
        }
        Request::Output { task } => {
            let dir = served.entry.session_dir.clone();
            blocking(Box::new(move || steer::output(&dir, &task))).await
        }
        Request::Events => json!({ "error": "`events` streams" }),
    }
}

/// Writes the journal's lines to a watcher until the session ends or the watcher leaves;
/// lines that arrive together are written together.
async fn stream_events(
    mut write: BufWriter<tokio::net::unix::OwnedWriteHalf>,
    journal: &Journal,
) -> std::io::Result<()> {
    let (kept, mut rx) = journal.watch();
    for line in kept {
        write.write_all(line.as_bytes()).await?;
        write.write_all(b"\n").await?;
    }
    write.flush().await?;
    while let Some(line) = rx.recv().await {
        write.write_all(line.as_bytes()).await?;
        write.write_all(b"\n").await?;
        while let Ok(more) = rx.try_recv() {
            write.write_all(more.as_bytes()).await?;
            write.write_all(b"\n").await?;
        }
        write.flush().await?;
    }
    write.shutdown().await
}

/// Sends `request` to the socket at `path` and returns its answer.
pub(crate) async fn ask(path: &Path, request: &str) -> std::io::Result<Value> {
    ask_within(path, request, PATIENCE).await
}

/// Sends `request` to the socket at `path` and returns its answer, waiting `patience`.
pub(crate) async fn ask_within(
    path: &Path,
    request: &str,
    patience: Duration,
) -> std::io::Result<Value> {
    let exchange = async {
        let mut stream = UnixStream::connect(path).await?;
        stream.write_all(format!("{request}\n").as_bytes()).await?;
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line).await?;
        serde_json::from_str(&line).map_err(std::io::Error::other)
    };
    tokio::time::timeout(patience, exchange)
        .await
        .map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer within {} s", patience.as_secs()),
            )
        })?
}

/// Subscribes to the session's `events` at `path`: its lines, one JSON object each.
pub(crate) async fn watch(path: &Path) -> std::io::Result<tokio::io::Lines<BufReader<UnixStream>>> {
    let mut stream = tokio::time::timeout(PATIENCE, UnixStream::connect(path))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    stream.write_all(b"events\n").await?;
    Ok(BufReader::new(stream).lines())
}
