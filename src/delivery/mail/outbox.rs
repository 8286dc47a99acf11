//! The outbox: a message kept as an `.eml` file, one file per message.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{MailError, MailPayload, build};

/// The `.eml` file name of a Message-ID: `<run-42.0@example.com>` → `run-42.0@example.com.eml`.
pub fn eml_file_name(message_id: &str) -> String {
    let inner = message_id.trim().trim_start_matches('<').trim_end_matches('>');
    let safe: String = inner
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@' | '+') { c } else { '_' })
        .collect();
    let safe = safe.trim_start_matches('.');
    if safe.is_empty() { "message.eml".to_owned() } else { format!("{safe}.eml") }
}

/// Writes the message as an `.eml` file in `dir` (created if missing), atomically: a temporary
/// file in the same folder, synced, then renamed over `eml_file_name(message_id)`. Writing the same
/// message again replaces the file, so one message is one file. Returns the path.
pub fn write_eml(dir: &Path, p: &MailPayload) -> Result<PathBuf, MailError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let bytes = build(p)?.formatted();
    fs::create_dir_all(dir).map_err(|source| MailError::Io {
        context: format!("could not create the outbox folder {}", dir.display()),
        source,
    })?;
    let path = dir.join(eml_file_name(&p.message_id));
    let tmp = dir.join(format!(
        ".{}.{}-{}.tmp",
        eml_file_name(&p.message_id),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let write = || -> std::io::Result<()> {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, &path)
    };
    if let Err(source) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(MailError::Io { context: format!("could not write {}", path.display()), source });
    }
    Ok(path)
}
