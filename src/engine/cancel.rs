//! Stopping a run early.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// Stops a run early: the daemon's shutdown after its grace period, or a
/// newer fire with `overlap: replace`. Cheap to clone; clones share the
/// cancellation.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    token: CancellationToken,
    why: Arc<Mutex<Option<(&'static str, String)>>>,
}

impl Cancel {
    /// Cancels with a [`crate::store::reason`] and a message for the run's error.
    pub fn cancel(&self, reason: &'static str, message: impl Into<String>) {
        if let Ok(mut why) = self.why.lock() {
            why.get_or_insert((reason, message.into()));
        }
        self.token.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }

    pub(super) fn reason(&self) -> (&'static str, String) {
        self.why.lock().ok().and_then(|w| w.clone()).unwrap_or(("shutdown", "the run was cancelled".into()))
    }
}
