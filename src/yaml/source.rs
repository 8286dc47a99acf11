//! Positions: every node of a YAML document with the line and column where
//! it starts (from yaml-rust2's event parser), and the position of a path
//! of keys and indices, for placing diagnostics.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

use super::SYNTAX_HINT;
use crate::diag::Diagnostic;

/// A YAML node with the position where it starts (1-based).
#[derive(Debug, Clone)]
pub struct Node {
    pub line: usize,
    pub col: usize,
    pub kind: NodeKind,
    /// How a scalar was written (`Collection` for mappings and sequences).
    pub style: Style,
}

/// How a node was written, which decides whether positions inside a string
/// value can be mapped back to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    /// `|`: each line of the value is a line of the file.
    Literal,
    /// `>`: lines are folded, so positions inside are not exact.
    Folded,
    Collection,
}

#[derive(Debug, Clone)]
pub enum NodeKind {
    Scalar(String),
    Seq(Vec<Node>),
    /// Keys keep their own positions, which is where an unknown key is reported.
    Map(Vec<(Node, Node)>),
}

impl Node {
    pub fn scalar_str(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// The value under `key` when this node is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            NodeKind::Map(entries) => entries.iter().find(|(k, _)| k.scalar_str() == Some(key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The key node for `key` when this node is a mapping.
    pub fn key_node(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            NodeKind::Map(entries) => entries.iter().find(|(k, _)| k.scalar_str() == Some(key)).map(|(k, _)| k),
            _ => None,
        }
    }
}

/// Positions of every node of one parsed file.
#[derive(Debug, Clone)]
pub struct SourceMap {
    pub file: PathBuf,
    pub root: Node,
}

impl SourceMap {
    /// Line and column of the value at `path` (mapping keys and sequence
    /// indices as strings). A path that does not exist resolves to its
    /// nearest existing ancestor, so a diagnostic always has a location.
    pub fn locate(&self, path: &[&str]) -> (usize, usize) {
        let node = self.node_at(path);
        (node.line, node.col)
    }

    /// Line and column of the *key* at the end of `path`, for problems with
    /// the key itself. Falls back like [`SourceMap::locate`].
    pub fn locate_key(&self, path: &[&str]) -> (usize, usize) {
        if let Some((last, parent)) = path.split_last() {
            let parent = self.node_at(parent);
            if let Some(k) = parent.key_node(last) {
                return (k.line, k.col);
            }
        }
        self.locate(path)
    }

    /// File position of `line`:`col` (1-based, in characters) inside the
    /// string value at `path`, e.g. of an error inside a template. Exact for
    /// literal blocks (`|`) and one-line scalars; otherwise the value's start.
    pub fn locate_in_value(&self, path: &[&str], line: usize, col: usize) -> (usize, usize) {
        let node = self.node_at(path);
        let NodeKind::Scalar(value) = &node.kind else { return (node.line, node.col) };
        let (line, col) = (line.max(1), col.max(1));
        match node.style {
            Style::Literal => {
                // Leading empty lines are part of the value but the node starts at the first content line.
                let leading = value.chars().take_while(|c| *c == '\n').count();
                if line > leading {
                    (node.line + line - 1 - leading, node.col + col - 1)
                } else {
                    (node.line, node.col)
                }
            }
            Style::Plain if line == 1 && !value.contains('\n') => (node.line, node.col + col - 1),
            Style::SingleQuoted | Style::DoubleQuoted if line == 1 && !value.contains('\n') => {
                (node.line, node.col + col)
            }
            _ => (node.line, node.col),
        }
    }

    fn node_at(&self, path: &[&str]) -> &Node {
        let mut node = &self.root;
        for seg in path {
            let next = match &node.kind {
                NodeKind::Map(_) => node.get(seg),
                NodeKind::Seq(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
                NodeKind::Scalar(_) => None,
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        node
    }

    /// A diagnostic located at the value of `path`.
    pub fn error_at(&self, path: &[&str], message: impl Into<String>) -> Diagnostic {
        let (line, col) = self.locate(path);
        Diagnostic::new(&self.file, line, col, message)
    }
}

/// Every node of `text` with its position; a syntax error is one diagnostic.
pub(super) fn parse_nodes(file: &Path, text: &str) -> Result<Node, Diagnostic> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut root: Option<Node> = None;
    loop {
        let (event, mark) = parser.next_token().map_err(|e| {
            let m = e.marker();
            Diagnostic::new(file, m.line(), m.col() + 1, format!("invalid YAML: {}", e.info())).with_hint(SYNTAX_HINT)
        })?;
        let (line, col) = (mark.line(), mark.col() + 1);
        let finished: Option<(Node, usize)> = match event {
            Event::StreamEnd => break,
            Event::Nothing | Event::StreamStart | Event::DocumentStart | Event::DocumentEnd => None,
            Event::Scalar(value, style, anchor, _) => {
                let style = match style {
                    TScalarStyle::SingleQuoted => Style::SingleQuoted,
                    TScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                    TScalarStyle::Literal => Style::Literal,
                    TScalarStyle::Folded => Style::Folded,
                    _ => Style::Plain,
                };
                Some((Node { line, col, kind: NodeKind::Scalar(value), style }, anchor))
            }
            Event::Alias(id) => anchors.get(&id).cloned().map(|n| (n, 0)),
            Event::SequenceStart(anchor, _) => {
                stack.push(Frame::Seq(line, col, anchor, Vec::new()));
                None
            }
            Event::MappingStart(anchor, _) => {
                stack.push(Frame::Map(line, col, anchor, Vec::new(), None));
                None
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq(l, c, anchor, items)) => {
                    Some((Node { line: l, col: c, kind: NodeKind::Seq(items), style: Style::Collection }, anchor))
                }
                _ => None,
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map(l, c, anchor, entries, _)) => {
                    // A block mapping's start event points past its first
                    // key; the first key is where a reader looks.
                    let (l, c) = entries.first().map_or((l, c), |(k, _)| (k.line, k.col));
                    Some((Node { line: l, col: c, kind: NodeKind::Map(entries), style: Style::Collection }, anchor))
                }
                _ => None,
            },
        };
        if let Some((node, anchor)) = finished {
            if anchor != 0 {
                anchors.insert(anchor, node.clone());
            }
            match stack.last_mut() {
                Some(Frame::Seq(_, _, _, items)) => items.push(node),
                Some(Frame::Map(_, _, _, entries, pending)) => match pending.take() {
                    Some(key) => entries.push((key, node)),
                    None => *pending = Some(node),
                },
                None => {
                    if root.is_none() {
                        root = Some(node);
                    }
                }
            }
        }
    }
    Ok(root.unwrap_or(Node { line: 1, col: 1, kind: NodeKind::Map(Vec::new()), style: Style::Collection }))
}

enum Frame {
    Seq(usize, usize, usize, Vec<Node>),
    Map(usize, usize, usize, Vec<(Node, Node)>, Option<Node>),
}
