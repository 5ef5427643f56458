//! The control socket of a live session (`~/.crew/run/<pid>.sock`, 0600 in a 0700
//! directory): one request line in, one JSON line out. `snapshot` answers what `crew ps`
//! shows; anything else is answered with an error naming the requests there are.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinHandle;

use super::board::Board;
use super::registry::Entry;

/// How long either side waits for the other.
const PATIENCE: Duration = Duration::from_secs(2);

/// The longest request line read.
const MAX_REQUEST: u64 = 4096;

/// Binds `path` (replacing a stale socket there) and answers requests until aborted.
pub(crate) fn serve(
    path: &Path,
    entry: Entry,
    board: Arc<Board>,
) -> std::io::Result<JoinHandle<()>> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let entry = Arc::new(entry);
    Ok(tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (entry, board) = (entry.clone(), board.clone());
            tokio::spawn(async move {
                let _ = tokio::time::timeout(PATIENCE, answer(stream, &entry, &board)).await;
            });
        }
    }))
}

async fn answer(stream: UnixStream, entry: &Entry, board: &Board) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    BufReader::new(tokio::io::AsyncReadExt::take(read, MAX_REQUEST))
        .read_line(&mut line)
        .await?;
    let reply = match line.trim() {
        "snapshot" => super::snapshot::snapshot(entry, board),
        other => json!({"error": format!("unknown request `{other}`; the requests are: snapshot")}),
    };
    let mut bytes = serde_json::to_vec(&reply).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await?;
    write.shutdown().await
}

/// Sends `request` to the socket at `path` and returns its answer.
pub(crate) async fn ask(path: &PathBuf, request: &str) -> std::io::Result<Value> {
    let exchange = async {
        let mut stream = UnixStream::connect(path).await?;
        stream.write_all(format!("{request}\n").as_bytes()).await?;
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line).await?;
        serde_json::from_str(&line).map_err(std::io::Error::other)
    };
    tokio::time::timeout(PATIENCE, exchange)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer within 2 s"))?
}
