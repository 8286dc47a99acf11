//! Images sent with a message (SPEC §4 `attach`, `/image` in chat): files found by glob or
//! path inside the workspace, each opened through the workspace's handle (symlinks followed
//! only while they stay inside, forbidden paths refused on what was opened), recognized as PNG,
//! JPEG, WebP or GIF by their first bytes (not their name), at most 5 MB each and 8 per
//! message, all checked before any model call. The run's events record which images were sent
//! (path, bytes, sha256), never their content.

use std::path::{Component, Path};

use base64::Engine as _;
use globset::GlobBuilder;
use sha2::{Digest, Sha256};

use super::Agent;
use super::events::RunEvent;
use crate::llm::{Image, Message};
use crate::policy::{OpenError, PathError, Policy};

/// Largest image sent.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Most images sent with one message.
pub const MAX_IMAGES: usize = 8;
/// Most entries a glob looks at, so a pattern like `**/*.png` in a huge tree stays bounded.
const MAX_WALK: usize = 20_000;

/// One image ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The path relative to the workspace (as given when outside it would be refused).
    pub path: String,
    pub bytes: u64,
    /// Hex SHA-256 of the file's bytes.
    pub sha256: String,
    pub image: Image,
}

/// Why images could not be attached; a run with one fails before any model call.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("`{pattern}` is not a valid glob: {reason}")]
    Pattern { pattern: String, reason: String },
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("`{0}` does not exist")]
    Missing(String),
    #[error("`{0}` is not a file")]
    NotAFile(String),
    #[error("`{path}` is {bytes} bytes; an image may be at most 5 MB ({MAX_IMAGE_BYTES} bytes)")]
    TooLarge { path: String, bytes: u64 },
    #[error("`{0}` is not a PNG, JPEG, WebP or GIF image")]
    NotAnImage(String),
    #[error("{0} images to send; at most {MAX_IMAGES} go with one message")]
    TooMany(usize),
    #[error("cannot read `{path}`: {source}")]
    Io { path: String, source: std::io::Error },
}

impl Agent {
    /// Images to send with the next message. They go with every attempt of it (a retried run
    /// sends them again) until a turn completes.
    pub fn attach_images(&mut self, images: Vec<Attachment>) {
        self.images.extend(images);
    }

    /// The images waiting for the next message.
    pub fn attached_images(&self) -> &[Attachment] {
        &self.images
    }

    /// Finds and checks the images `patterns` name (globs or paths relative to the workspace)
    /// under this agent's policy; nothing is attached unless all of them pass.
    pub fn find_images(&self, patterns: &[String]) -> Result<Vec<Attachment>, AttachError> {
        collect(&self.policy, patterns)
    }

    /// The user message of a turn: the text, with the images attached for it, each recorded.
    pub(super) fn user_message(&self, text: &str) -> Message {
        let mut message = Message::user(text);
        for a in &self.images {
            let detail = serde_json::json!({
                "path": a.path, "bytes": a.bytes, "sha256": a.sha256, "media_type": a.image.media_type,
            });
            self.record(RunEvent::Note { kind: "image", detail: detail.to_string() });
            message.images.push(a.image.clone());
        }
        message
    }
}

/// The images of `patterns`, in order, each file once: every one must pass, or none is sent.
/// A glob that matches nothing adds nothing; a path that does not exist is an error.
pub fn collect(policy: &Policy, patterns: &[String]) -> Result<Vec<Attachment>, AttachError> {
    let mut files: Vec<String> = Vec::new();
    for pattern in patterns {
        let pattern = normalize(pattern);
        let found = if is_glob(pattern) { expand(policy, pattern)? } else { vec![pattern.to_string()] };
        for f in found {
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    if files.len() > MAX_IMAGES {
        return Err(AttachError::TooMany(files.len()));
    }
    files.iter().map(|f| load(policy, f)).collect()
}

/// One image file, `input` relative to the workspace (or absolute inside it).
pub fn load(policy: &Policy, input: &str) -> Result<Attachment, AttachError> {
    use std::io::Read as _;
    let opened = policy.fs().open_read(input).map_err(|e| match e {
        OpenError::Refused(e) => AttachError::Path(e),
        OpenError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => AttachError::Missing(input.to_string()),
        OpenError::Io(e) => AttachError::Io { path: input.to_string(), source: e },
    })?;
    let shown =
        opened.path.strip_prefix(policy.workspace()).map_or_else(|_| input.to_string(), |p| p.display().to_string());
    let io = |e| AttachError::Io { path: shown.clone(), source: e };
    // Checked on the open file, the one read.
    let meta = opened.file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(AttachError::NotAFile(shown));
    }
    if meta.len() > MAX_IMAGE_BYTES {
        return Err(AttachError::TooLarge { path: shown, bytes: meta.len() });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    opened.file.take(MAX_IMAGE_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(AttachError::TooLarge { path: shown, bytes: bytes.len() as u64 });
    }
    let media_type = sniff(&bytes).ok_or_else(|| AttachError::NotAnImage(shown.clone()))?;
    Ok(Attachment {
        bytes: bytes.len() as u64,
        sha256: hex::encode(Sha256::digest(&bytes)),
        image: Image { media_type, base64: base64::engine::general_purpose::STANDARD.encode(&bytes).into() },
        path: shown,
    })
}

/// The image type of `bytes` by its signature.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

/// Drops leading `./` segments.
fn normalize(pattern: &str) -> &str {
    let mut p = pattern.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.trim_start_matches('/');
    }
    p
}

/// Files under the workspace that `pattern` matches, relative and sorted. Folders linked by
/// symlinks are not entered; a matching file that is a link is checked like any path.
fn expand(policy: &Policy, pattern: &str) -> Result<Vec<String>, AttachError> {
    if pattern.starts_with('/') || pattern.split('/').any(|seg| seg == "..") {
        return Err(AttachError::Path(PathError::Outside {
            input: pattern.to_string(),
            workspace: policy.workspace().to_path_buf(),
        }));
    }
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| AttachError::Pattern { pattern: pattern.to_string(), reason: e.kind().to_string() })?
        .compile_matcher();
    // Start below the leading components without glob syntax; look only as deep as the
    // pattern reaches unless it has `**`.
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts[..parts.len() - 1].iter().take_while(|s| !is_glob(s)).count();
    let rest = &parts[literal..];
    let max_depth = if rest.iter().any(|s| s.contains("**")) { usize::MAX } else { rest.len() };
    let base: std::path::PathBuf = parts[..literal].iter().collect();
    let start = policy.resolve_path(&base.display().to_string())?;
    let mut found = Vec::new();
    let mut stack = vec![(start, 1usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            seen += 1;
            if seen > MAX_WALK {
                break;
            }
            let path = entry.path();
            let Some(rel) = relative(policy.workspace(), &path) else { continue };
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if depth < max_depth && !policy.is_forbidden(&path) {
                    stack.push((path, depth + 1));
                }
            } else if matcher.is_match(&rel) {
                found.push(rel);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `path` relative to `root` with `/` separators; `None` for names that are not UTF-8.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect();
    parts.map(|p| p.join("/"))
}

#[cfg(test)]
mod tests;
