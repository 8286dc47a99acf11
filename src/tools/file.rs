//! `file_read` and `file_list`: looking at the workspace.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::format::human_size;
use super::{Tool, ToolContext, ToolError};
use crate::llm::ToolSpec;
use crate::policy::{CallInfo, Effect, OpenError, Opened};
use std::os::unix::ffi::OsStrExt as _;

/// Largest file `file_read` opens.
const MAX_READ_BYTES: u64 = 2 * 1024 * 1024;
/// Largest file whose lines `file_read` counts to the end when it reads a range.
const COUNT_ALL_BYTES: u64 = 64 * 1024 * 1024;
/// Most entries `file_list` returns.
const MAX_LIST_ENTRIES: usize = 500;

pub struct FileRead;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileReadArgs {
    /// Path relative to the workspace.
    pub path: String,
    /// First line to return (1-based).
    pub offset: Option<usize>,
    /// Number of lines to return; 0 or absent: to the end.
    pub limit: Option<usize>,
}

#[async_trait]
impl Tool for FileRead {
    const NAME: &'static str = "file_read";
    type Args = FileReadArgs;

    fn description(&self) -> &'static str {
        "Read a text file in the workspace, optionally a range of lines."
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn info(&self, args: &FileReadArgs) -> CallInfo {
        CallInfo::new(args.path.clone(), Self::NAME)
    }

    async fn call(&self, args: FileReadArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let wanted = args.path.clone();
        let opened = ctx.open_read(&args.path);
        let result = tokio::task::spawn_blocking(move || read(opened.map_err(|e| open_failure(&args.path, e))?, &args))
            .await
            .map_err(|e| ToolError::System(format!("reading failed: {e}")))?;
        match result {
            Err(ToolError::Failed { message, partial }) if message.ends_with(NOT_FOUND) => {
                Err(ToolError::Failed { message: with_suggestion(message, &wanted, ctx), partial })
            }
            other => other,
        }
    }
}

fn read(opened: Opened, args: &FileReadArgs) -> Result<String, ToolError> {
    use std::io::{BufRead, BufReader};

    // Small models fill in every field, `"offset": 0, "limit": 0`, to mean
    // the whole file; zero lines is never what they want.
    let limit = args.limit.filter(|l| *l > 0);
    let offset = args.offset.filter(|o| *o > 0);
    // Checked on the open file, the one read. Only regular files: a FIFO would block the run,
    // a device or socket has effects or no end (opened without blocking, never read).
    let file = opened.file;
    let meta = file.metadata().map_err(|e| io_failure(&args.path, &e))?;
    if meta.is_dir() {
        return Err(ToolError::failed(format!("`{}` is a directory; use file_list to see what it holds", args.path)));
    }
    if !meta.is_file() {
        return Err(ToolError::Refused(format!("`{}` is not a regular file; only regular files are read", args.path)));
    }
    if meta.len() > MAX_READ_BYTES && offset.is_none() && limit.is_none() {
        return Err(ToolError::failed(format!(
            "`{}` is {} bytes, larger than {MAX_READ_BYTES}; {READ_A_RANGE}",
            args.path,
            meta.len()
        )));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(|e| io_failure(&args.path, &e))?;
    if head[..head.len().min(8192)].contains(&0) {
        return Err(ToolError::failed(format!("`{}` is a binary file, not text", args.path)));
    }
    // Chunk by chunk, keeping only the range asked for and at most MAX_READ_BYTES of it: memory
    // stays bounded whatever the file's size or its longest line. Past the range, lines are
    // counted on (for "of N") in files up to COUNT_ALL_BYTES.
    let start = offset.unwrap_or(1);
    let end = limit.map_or(usize::MAX, |l| start - 1 + l);
    let count_all = meta.len() <= COUNT_ALL_BYTES;
    let (mut out, mut number, mut cut, mut stopped, mut partial) = (Vec::new(), 1usize, false, false, false);
    loop {
        let chunk = reader.fill_buf().map_err(|e| io_failure(&args.path, &e))?;
        if chunk.is_empty() {
            break;
        }
        let len = chunk.len();
        let mut from = 0;
        while from < len {
            let newline = chunk[from..].iter().position(|b| *b == b'\n').map(|i| from + i);
            let to = newline.map_or(len, |i| i + 1);
            if (start..=end).contains(&number) && !cut {
                if out.len() + (to - from) > MAX_READ_BYTES as usize {
                    cut = true;
                } else {
                    out.extend_from_slice(&chunk[from..to]);
                }
            }
            partial = newline.is_none();
            if newline.is_some() {
                number += 1;
            }
            from = to;
        }
        reader.consume(len);
        if (number > end || cut) && !count_all {
            stopped = true;
            break;
        }
    }
    // `number` is the line the next byte would belong to: the count of lines is one less unless
    // the last line has no newline.
    let lines = if partial { number } else { number - 1 };
    let text = String::from_utf8_lossy(&out);
    if offset.is_none() && limit.is_none() {
        return Ok(if text.is_empty() { format!("(`{}` is empty)", args.path) } else { text.into_owned() });
    }
    if start > lines && !stopped {
        return Err(ToolError::failed(format!("`{}` has {lines} lines; offset {start} is past the end", args.path)));
    }
    let shown_lines =
        out.iter().filter(|b| **b == b'\n').count() + usize::from(out.last().is_some_and(|b| *b != b'\n'));
    let last = start + shown_lines.saturating_sub(1);
    let mut shown = text.trim_end_matches('\n').to_string();
    let inside_line = out.last().is_some_and(|b| *b != b'\n');
    shown.push_str(&match (cut, stopped) {
        (true, _) if inside_line => {
            format!("\n(lines {start}-{last}; cut at {MAX_READ_BYTES} bytes inside line {last})")
        }
        (true, _) => format!("\n(lines {start}-{last}; cut at {MAX_READ_BYTES} bytes, read on from line {})", last + 1),
        (false, true) => format!("\n(lines {start}-{last}; more lines follow)"),
        (false, false) => format!("\n(lines {start}-{last} of {lines})"),
    });
    Ok(shown)
}

/// The range a `file_read` result ends with, `(lines A-B of N)`: first and last line shown and
/// the file's lines. `None` for a whole file (no such line) and for a range whose end is not
/// known (`more lines follow`, cut at the size limit).
pub fn read_range(result: &str) -> Option<(usize, usize, usize)> {
    let last = result.trim_end().lines().next_back()?;
    let inner = last.strip_prefix("(lines ")?.strip_suffix(')')?;
    let (range, lines) = inner.split_once(" of ")?;
    let (a, b) = range.split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()?, lines.parse().ok()?))
}

/// What a file too large to read whole says to do.
const READ_A_RANGE: &str = "read a range with offset and limit";

/// `file_read` as a turn offers it while every file it read came back whole: the path alone.
/// The 1.5B model fills in the range it is offered (`"limit": 0`, `"offset": 1`, an offset of
/// `1001000000000000` that is past the end): 56 prompt tokens in every request that offers the
/// tool, a few more written in each call, and a failed read to recover from now and then
/// (bench/README.md, stop 46). The tool takes a range whatever the schema offered says.
pub fn whole_file_spec(spec: &ToolSpec) -> ToolSpec {
    let mut parameters = spec.parameters.clone();
    if let Some(properties) = parameters.get_mut("properties").and_then(serde_json::Value::as_object_mut) {
        properties.remove("offset");
        properties.remove("limit");
    }
    ToolSpec { name: spec.name.clone(), description: "Read a text file in the workspace.".into(), parameters }
}

/// Whether a `file_read` result (as the model was given it) did not carry the whole file: the
/// file was too large to read whole, or the result was cut. From then on the turn offers the
/// range (`offset`, `limit`).
pub fn needs_range(result: &str) -> bool {
    result.contains(READ_A_RANGE) || super::format::was_truncated(result)
}

/// A `file_read` result without the range line the tool adds (what the file holds, for code
/// that parses it).
pub fn without_range(result: &str) -> &str {
    let text = result.trim_end();
    match text.rsplit_once('\n') {
        Some((body, last)) if last.starts_with("(lines ") && last.ends_with(')') => body,
        _ => text,
    }
}

pub struct FileList;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileListArgs {
    /// Directory relative to the workspace; default (or `/`) the workspace itself.
    pub path: Option<String>,
    /// List subdirectories too.
    pub recursive: Option<bool>,
}

impl FileListArgs {
    /// The folder to list as the call names it: `.` when no path is given, and for `/`, which
    /// a model writes for "the top of what I can see" (the 1.5B model listed `/` to describe
    /// the workspace, was refused, and gave up): the host's root is never listable, so `/` has
    /// no other meaning here. Any other absolute path is resolved as written.
    fn folder(&self) -> String {
        match self.path.as_deref().map(str::trim) {
            None | Some("/") => ".".into(),
            Some(p) => p.to_string(),
        }
    }
}

#[async_trait]
impl Tool for FileList {
    const NAME: &'static str = "file_list";
    type Args = FileListArgs;

    fn description(&self) -> &'static str {
        "List files and directories in the workspace (directories end with /)."
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn info(&self, args: &FileListArgs) -> CallInfo {
        CallInfo::new(args.folder(), Self::NAME)
    }

    async fn call(&self, args: FileListArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let shown = args.folder();
        let opened = ctx.policy.fs().open_read(&shown).map_err(|e| open_failure(&shown, e))?;
        let meta = opened.file.metadata().map_err(|e| io_failure(&shown, &e))?;
        if !meta.is_dir() {
            return Err(ToolError::failed(format!("`{shown}` is a file, not a directory; use file_read")));
        }
        let recursive = args.recursive.unwrap_or(false);
        let policy = ctx.policy.clone();
        let listing = tokio::task::spawn_blocking(move || list(opened, recursive, &|p| policy.is_unlisted(p)))
            .await
            .map_err(|e| ToolError::System(format!("listing failed: {e}")))?
            .map_err(|e| io_failure(&shown, &e))?;
        if listing.entries.is_empty() {
            return Ok(format!("(`{shown}` is empty)"));
        }
        let mut out = listing.entries.join("\n");
        if listing.more {
            out.push_str(&format!("\n(listing stopped at {MAX_LIST_ENTRIES} entries; list a subdirectory)"));
        } else if listing.entries.len() >= SUMMARY_FROM {
            out.push('\n');
            out.push_str(&summary(&listing.entries));
        }
        Ok(out)
    }
}

/// Listings of this many entries or more end with their counts.
const SUMMARY_FROM: usize = 3;

/// The counts of a listing: entries, files, folders and files by extension, e.g. `(6 entries:
/// 5 files, 1 folder; by type: 3 .md, 1 .png, 1 .txt)`. Small models miscount lists by eye;
/// "how many .md files" is then read, not counted.
fn summary(entries: &[String]) -> String {
    let folders = entries.iter().filter(|e| e.ends_with('/')).count();
    let mut by_type: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for entry in entries.iter().filter(|e| !e.ends_with('/')) {
        let name = entry.rsplit_once(" (").map_or(entry.as_str(), |(n, _)| n);
        let name = name.rsplit('/').next().unwrap_or(name);
        let kind = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => format!(".{}", ext.to_lowercase()),
            _ => "without extension".to_string(),
        };
        *by_type.entry(kind).or_default() += 1;
    }
    let files = entries.len() - folders;
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut text = format!(
        "({}: {}, {}",
        plural(entries.len(), "entry", "entries"),
        plural(files, "file", "files"),
        plural(folders, "folder", "folders")
    );
    if !by_type.is_empty() {
        let kinds: Vec<String> = by_type.iter().map(|(k, n)| format!("{n} {k}")).collect();
        text.push_str(&format!("; by type: {}", kinds.join(", ")));
    }
    text.push(')');
    text
}

struct Listing {
    entries: Vec<String>,
    more: bool,
}

/// The entries under the open folder `root` (at `root.path` in the workspace), each folder
/// opened from the one above it without following symlinks: a link is listed, never entered.
fn list(root: Opened, recursive: bool, hidden: &dyn Fn(&Path) -> bool) -> std::io::Result<Listing> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    let mut out = Listing { entries: Vec::new(), more: false };
    let mut stack = vec![(std::os::fd::OwnedFd::from(root.file), std::path::PathBuf::new())];
    while let Some((dir, rel_dir)) = stack.pop() {
        let mut names: Vec<std::ffi::OsString> = Vec::new();
        for entry in rustix::fs::Dir::read_from(&dir)? {
            let name = std::ffi::OsStr::from_bytes(entry?.file_name().to_bytes()).to_os_string();
            if name != "." && name != ".." {
                names.push(name);
            }
        }
        names.sort();
        let mut subdirs = Vec::new();
        for name in names {
            let rel = rel_dir.join(&name);
            if hidden(&root.path.join(&rel)) {
                continue;
            }
            let Ok(st) = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) else { continue };
            if out.entries.len() >= MAX_LIST_ENTRIES {
                out.more = true;
                return Ok(out);
            }
            let shown = rel.display().to_string();
            if FileType::from_raw_mode(st.st_mode).is_dir() {
                out.entries.push(format!("{shown}/"));
                if recursive && name != ".git" && name != "target" && name != "node_modules" {
                    let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                    if let Ok(fd) = rustix::fs::openat(&dir, name.as_os_str(), flags, Mode::empty()) {
                        subdirs.push((fd, rel));
                    }
                }
            } else {
                out.entries.push(format!("{shown} ({})", human_size(u64::try_from(st.st_size).unwrap_or(0))));
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(out)
}

/// How a failure for a missing path ends.
const NOT_FOUND: &str = "does not exist; use file_list to see what does";

/// A missing-path failure with the workspace files the model most likely meant.
fn with_suggestion(message: String, wanted: &str, ctx: &ToolContext) -> String {
    let allowed = |p: &Path| !ctx.policy.is_forbidden(p);
    match super::near::suggestion(wanted, &super::near::similar_paths(&ctx.workspace, wanted, &allowed)) {
        Some(hint) => hint,
        None => message,
    }
}

/// A path the policy refused is read by the model as a refusal; a failed open as a failure.
fn open_failure(shown: &str, e: OpenError) -> ToolError {
    match e {
        OpenError::Refused(e) => e.into(),
        OpenError::Io(e) => io_failure(shown, &e),
    }
}

fn io_failure(shown: &str, e: &std::io::Error) -> ToolError {
    // Opening a socket fails with ENXIO: say what the type check of an opened file says.
    if e.raw_os_error() == Some(libc::ENXIO) {
        return ToolError::Refused(format!("`{shown}` is not a regular file; only regular files are read"));
    }
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::failed(format!("`{shown}` {NOT_FOUND}")),
        std::io::ErrorKind::PermissionDenied => {
            ToolError::failed(format!("`{shown}` cannot be read: permission denied"))
        }
        // A slow or busy file system (a network mount) may answer the next time.
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock => {
            ToolError::transient(format!("`{shown}`: {e}"))
        }
        _ => ToolError::System(format!("`{shown}`: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Autonomy;
    use crate::policy::Policy;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::for_test(Policy::new(Autonomy::Supervised, dir, &[dir.join("private")]).unwrap())
    }

    #[tokio::test]
    async fn reads_files_and_line_ranges() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let c = ctx(dir.path());
        let args = |p: &str, o, l| FileReadArgs { path: p.into(), offset: o, limit: l };
        assert_eq!(FileRead.call(args("a.txt", None, None), &c).await.unwrap(), "one\ntwo\nthree\n");
        assert_eq!(FileRead.call(args("a.txt", Some(2), Some(1)), &c).await.unwrap(), "two\n(lines 2-2 of 3)");
        // Zeros mean "not given": the whole file, or from the offset to the end.
        assert_eq!(FileRead.call(args("a.txt", Some(0), Some(0)), &c).await.unwrap(), "one\ntwo\nthree\n");
        assert_eq!(FileRead.call(args("a.txt", Some(2), Some(0)), &c).await.unwrap(), "two\nthree\n(lines 2-3 of 3)");
        assert_eq!(
            FileRead.call(args("nope.txt", None, None), &c).await.unwrap_err(),
            ToolError::failed("`nope.txt` does not exist; use file_list to see what does")
        );
        assert!(matches!(FileRead.call(args("../x", None, None), &c).await, Err(ToolError::Refused(_))));
        // A file named without its folder: the failure names where it is, never a forbidden copy.
        for folder in ["logs", "private"] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
            std::fs::write(dir.path().join(folder).join("app.log"), "ERROR x\n").unwrap();
        }
        assert_eq!(
            FileRead.call(args("app.log", None, None), &c).await.unwrap_err(),
            ToolError::failed("`app.log` is not there, but `logs/app.log` exists: use that path")
        );
        std::fs::write(dir.path().join("bin"), [0u8, 1, 2]).unwrap();
        assert_eq!(
            FileRead.call(args("bin", None, None), &c).await.unwrap_err(),
            ToolError::failed("`bin` is a binary file, not text")
        );
    }

    #[tokio::test]
    async fn reads_only_regular_files_and_bounds_every_range() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        let args = |p: &str, o, l| FileReadArgs { path: p.into(), offset: o, limit: l };
        // A FIFO is refused without being opened (opening it would block the run).
        let fifo = std::ffi::CString::new(dir.path().join("pipe").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let refused = FileRead.call(args("pipe", None, None), &c).await.unwrap_err();
        assert_eq!(refused, ToolError::Refused("`pipe` is not a regular file; only regular files are read".into()));
        // A socket cannot even be opened (ENXIO): refused in the same words.
        let _listener = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
        let refused = FileRead.call(args("sock", None, None), &c).await.unwrap_err();
        assert_eq!(refused, ToolError::Refused("`sock` is not a regular file; only regular files are read".into()));
        // One 3 MB line: a range returns at most MAX_READ_BYTES and says where it stopped.
        std::fs::write(dir.path().join("big.txt"), format!("{}\nend\n", "x".repeat(3 * 1024 * 1024))).unwrap();
        let out = FileRead.call(args("big.txt", Some(1), Some(2)), &c).await.unwrap();
        assert!(out.ends_with("x\n(lines 1-1; cut at 2097152 bytes inside line 1)"), "{}", &out[out.len() - 80..]);
        assert!(out.len() <= 2 * 1024 * 1024 + 100, "at most MAX_READ_BYTES of the line: {}", out.len());
        let out = FileRead.call(args("big.txt", Some(2), Some(1)), &c).await.unwrap();
        assert_eq!(out, "end\n(lines 2-2 of 2)");
        // A last line without a newline counts.
        std::fs::write(dir.path().join("tail.txt"), "a\nb").unwrap();
        assert_eq!(FileRead.call(args("tail.txt", Some(2), None), &c).await.unwrap(), "b\n(lines 2-2 of 2)");
    }

    #[test]
    fn a_listing_ends_with_its_counts_by_type() {
        let entries: Vec<String> = [
            "faq.md (6 B)",
            "guides/",
            "install.md (10 B)",
            "logo.PNG (1 B)",
            "Makefile (3 B)",
            ".env (1 B)",
            "usage.md (8 B)",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(summary(&entries), "(7 entries: 6 files, 1 folder; by type: 3 .md, 1 .png, 2 without extension)");
        assert_eq!(summary(&["a/".into(), "b/".into(), "c/".into()]), "(3 entries: 0 files, 3 folders)");
    }

    #[tokio::test]
    async fn lists_directories_without_forbidden_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join("private")).unwrap();
        std::fs::write(root.join("sub/b.md"), "bb").unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        let c = ctx(&root);
        let flat = FileList.call(FileListArgs { path: None, recursive: None }, &c).await.unwrap();
        let slash = FileList.call(FileListArgs { path: Some("/".into()), recursive: None }, &c).await.unwrap();
        assert_eq!(slash, flat, "`/` lists the workspace, never the host's root");
        assert_eq!(flat, "a.txt (1 B)\nsub/");
        let deep = FileList.call(FileListArgs { path: None, recursive: Some(true) }, &c).await.unwrap();
        assert_eq!(deep, "a.txt (1 B)\nsub/\nsub/b.md (2 B)\n(3 entries: 2 files, 1 folder; by type: 1 .md, 1 .txt)");
    }
}
