//! Reading request bodies within the size limit, and draining refused ones so that the client sees the
//! answer instead of a reset connection.

use std::pin::Pin;

use axum::body::{Body, HttpBody};
use axum::http::{HeaderMap, header};

/// The body size the request declares, if it declares one.
pub(super) fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

/// Why a body was not read whole.
pub(super) enum ReadError {
    TooLarge,
    Failed(axum::Error),
}

/// Bodies declared larger than the limit but at most this large are read and
/// dropped before the 413 is sent; larger ones are refused at once.
pub(super) const DRAIN_CAP: u64 = 8 * 1024 * 1024;

/// Reads and drops the rest of a refused body: up to [`DRAIN_CAP`] bytes and
/// 5 seconds, whichever comes first.
pub(super) async fn drain(body: &mut Body) {
    let read = async {
        let mut seen: u64 = 0;
        while let Some(Ok(frame)) = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await {
            if let Ok(data) = frame.into_data() {
                seen += data.len() as u64;
                if seen > DRAIN_CAP {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), read).await;
}

/// Reads the whole body, stopping as soon as it grows past `limit` bytes.
pub(super) async fn read_body(body: &mut Body, limit: usize) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await {
        let Ok(data) = frame.map_err(ReadError::Failed)?.into_data() else {
            continue; // trailers
        };
        if bytes.len() + data.len() > limit {
            return Err(ReadError::TooLarge);
        }
        bytes.extend_from_slice(&data);
    }
    Ok(bytes)
}
