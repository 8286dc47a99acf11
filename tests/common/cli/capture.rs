//! One output stream of a child process, read by a task as it comes: the whole text so far,
//! and a wait for the first line that matches.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

/// A stream being read into memory.
pub(super) struct Capture {
    bytes: Arc<Mutex<Vec<u8>>>,
    /// How many bytes were read, and whether the stream ended.
    progress: watch::Receiver<(usize, bool)>,
}

impl Capture {
    /// Starts reading `stream` on the current Tokio runtime.
    pub(super) fn start(mut stream: impl AsyncRead + Unpin + Send + 'static) -> Capture {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let (progress_tx, progress) = watch::channel((0, false));
        let sink = bytes.clone();
        tokio::spawn(async move {
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = stream.read(&mut chunk).await {
                let len = {
                    let mut bytes = sink.lock().unwrap();
                    bytes.extend_from_slice(&chunk[..n]);
                    bytes.len()
                };
                progress_tx.send_replace((len, false));
            }
            let len = sink.lock().unwrap().len();
            progress_tx.send_replace((len, true));
        });
        Capture { bytes, progress }
    }

    /// Everything read so far (invalid UTF-8 replaced).
    pub(super) fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap()).into_owned()
    }

    /// The first line, without its line end, that satisfies `pred`: a finished line, or the
    /// unfinished last one once the stream ended. `None` if the stream ends without one.
    pub(super) async fn line(&self, pred: impl Fn(&str) -> bool) -> Option<String> {
        let mut progress = self.progress.clone();
        loop {
            let ended = progress.borrow_and_update().1;
            let text = self.text();
            let found = text
                .split_inclusive('\n')
                .filter(|line| ended || line.ends_with('\n'))
                .map(|line| line.trim_end_matches('\n').trim_end_matches('\r'))
                .find(|line| pred(line));
            if let Some(line) = found {
                return Some(line.to_string());
            }
            if ended || progress.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Resolves once the stream ended: the process, and every child it left holding the
    /// stream, closed it.
    pub(super) async fn ended(&self) {
        let mut progress = self.progress.clone();
        let _ = progress.wait_for(|(_, ended)| *ended).await;
    }
}
